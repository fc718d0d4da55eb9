// Reference renderings for tests/text/jinja_reference_test.cpp.
// Usage: node render.mjs CASES_FILE
// CASES_FILE holds a JSON array of {"template": "...", "variables": {...}}. Each template is
// rendered by @huggingface/jinja (the implementation transformers.js uses, with its Hugging
// Face settings: trim_blocks and lstrip_blocks). Prints one JSON array of {"ok": "<output>"}
// or {"error": "<message>"} on stdout.
import { readFileSync } from "node:fs";
import { Template } from "@huggingface/jinja";

const [file] = process.argv.slice(2);
if (!file) {
  console.error("usage: node render.mjs CASES_FILE");
  process.exit(2);
}
const cases = JSON.parse(readFileSync(file, "utf8"));
const out = cases.map(({ template, variables }) => {
  try {
    return { ok: new Template(template).render(variables) };
  } catch (e) {
    return { error: String(e && e.message ? e.message : e) };
  }
});
process.stdout.write(JSON.stringify(out));
