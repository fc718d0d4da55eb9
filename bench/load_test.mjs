#!/usr/bin/env node
// Load test for `strata serve` (run by hand; not part of the test suite). Loopback only,
// bounded in requests and time; reports throughput and latency percentiles.
//
//   node bench/load_test.mjs --url http://127.0.0.1:8080 [--api-key K] [--model NAME]
//        [--concurrency 16] [--requests 128] [--max-tokens 32] [--duration 60] [--stream 1]
//        [--endpoint chat|completions] [--prompts 16]
//
// With --stream 1 (default) it measures time to first token and inter-token latency from the
// SSE chunks (one chunk per detokenized delta); total latency is the whole request either way.
const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
const url = new URL(args.url ?? 'http://127.0.0.1:8080');
if (!['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname)) {
  console.error('load_test: loopback servers only (127.0.0.1, localhost, ::1)');
  process.exit(2);
}
const concurrency = Math.min(Number(args.concurrency ?? 16), 256);
const total = Math.min(Number(args.requests ?? 128), 100000);
const maxTokens = Number(args['max-tokens'] ?? 32);
const durationMs = Math.min(Number(args.duration ?? 60), 3600) * 1000;
const stream = (args.stream ?? '1') !== '0';
const endpoint = args.endpoint ?? 'chat';
const nPrompts = Number(args.prompts ?? 16);
const headers = { 'Content-Type': 'application/json' };
if (args['api-key']) headers.Authorization = 'Bearer ' + args['api-key'];

function body(i) {
  const text = `Request ${i % nPrompts}: write about topic number ${i % nPrompts} in a few words.`;
  const common = { max_tokens: maxTokens, temperature: 0, stream };
  if (args.model) common.model = args.model;
  if (stream) common.stream_options = { include_usage: true };
  return JSON.stringify(endpoint === 'chat' ? { ...common, messages: [{ role: 'user', content: text }] } : { ...common, prompt: text });
}

const results = [];
const statuses = {};
const t0 = performance.now();
let next = 0;

async function one(i) {
  const start = performance.now();
  const r = { ok: false, total: 0, ttft: null, itl: [], tokens: 0 };
  try {
    const res = await fetch(new URL(endpoint === 'chat' ? '/v1/chat/completions' : '/v1/completions', url), {
      method: 'POST', headers, body: body(i), signal: AbortSignal.timeout(Math.max(1000, durationMs)),
    });
    statuses[res.status] = (statuses[res.status] ?? 0) + 1;
    if (!stream) {
      const j = await res.json();
      r.ok = res.ok;
      r.tokens = j.usage?.completion_tokens ?? 0;
    } else {
      const dec = new TextDecoder();
      let buf = '', last = null;
      for await (const piece of res.body) {
        buf += dec.decode(piece, { stream: true });
        let k;
        while ((k = buf.indexOf('\n\n')) >= 0) {
          const ev = buf.slice(0, k);
          buf = buf.slice(k + 2);
          const line = ev.split('\n').find((l) => l.startsWith('data: '));  // after an id: field, if any
          if (!line) continue;
          const data = line.slice(6);
          if (data === '[DONE]') { r.ok = res.ok; continue; }
          const j = JSON.parse(data);
          if (j.usage) r.tokens = j.usage.completion_tokens;
          if (!j.choices?.length) continue;
          const now = performance.now();
          if (r.ttft === null) r.ttft = now - start;
          else r.itl.push(now - last);
          last = now;
        }
      }
    }
  } catch (e) {
    statuses[e.name] = (statuses[e.name] ?? 0) + 1;
  }
  r.total = performance.now() - start;
  results.push(r);
}

async function worker() {
  while (next < total && performance.now() - t0 < durationMs) await one(next++);
}
await Promise.all(Array.from({ length: concurrency }, worker));
const wall = (performance.now() - t0) / 1000;

const pct = (xs, p) => {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const ok = results.filter((r) => r.ok);
const tokens = ok.reduce((a, r) => a + r.tokens, 0);
const fmt = (xs) => ['p50', 'p90', 'p99'].map((p) => `${p} ${pct(xs, Number(p.slice(1))).toFixed(1)}`).join('  ') + ' ms';
console.log(`load_test: ${endpoint}, ${stream ? 'streaming' : 'non-streaming'}, concurrency ${concurrency}, max_tokens ${maxTokens}`);
console.log(`requests: ${results.length} sent, ${ok.length} ok; statuses ${JSON.stringify(statuses)}`);
console.log(`wall ${wall.toFixed(2)} s; ${(ok.length / wall).toFixed(2)} req/s; ${(tokens / wall).toFixed(1)} generated tok/s`);
console.log(`latency       ${fmt(ok.map((r) => r.total))}`);
if (stream) {
  console.log(`time to first ${fmt(ok.map((r) => r.ttft).filter((x) => x !== null))}`);
  console.log(`inter-token   ${fmt(ok.flatMap((r) => r.itl))}`);
}
process.exit(ok.length === results.length ? 0 : 1);
