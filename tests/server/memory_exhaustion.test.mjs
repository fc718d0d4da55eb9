// `strata serve` on a cache pool with room for six short requests (node --test; run by
// memory_exhaustion_test.cpp). Environment: STRATA_BINARY, STRATA_MODEL_DIR (flash-tiny).
// - A request whose cache at its longest cannot fit the pool is a 400 naming the pool's bytes,
//   and the server goes on serving.
// - A burst whose cache outgrows the pool is preempted and recomputed: every output equals the
//   request run alone, /metrics counts the preemptions, and afterwards nothing runs or waits and
//   the pool holds exactly its prefix checkpoints' slots and blocks, as before the burst.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { startStrataServe } from './start_server.mjs';
import { fromEvents, fromResponse } from '../soak/outputs.mjs';

const BIN = process.env.STRATA_BINARY;
const MODEL_DIR = process.env.STRATA_MODEL_DIR;
const CONTEXT = 65536;  // flash-tiny's own: one request can need more than the whole pool

// The pool: six slots and eight and a half blocks (flash-tiny: a 1.66 MB slot per request, a
// 47 KB block per 128 tokens): six short requests are admitted, the rest wait, and as the six
// grow past 128 and 256 tokens the newest must give way.
const ledger = JSON.parse(execFileSync(BIN, ['ledger', '--model', MODEL_DIR, '--context', String(CONTEXT), '--json'], { encoding: 'utf8' }));
const SLOT = ledger.fixed_bytes, BLOCK = ledger.block_bytes;
const POOL = 6 * SLOT + 8 * BLOCK + Math.floor(BLOCK / 2);

const server = await startStrataServe(BIN, ['--model', MODEL_DIR, '--model-name', 'tiny', '--max-context', String(CONTEXT),
  '--pool-bytes', String(POOL), '--max-running', '8', '--log-format', 'off']);
after(async () => {
  server.proc.kill('SIGTERM');
  await server.exited;
});

async function post(path, body) {
  const r = await fetch(server.url + path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  const text = await r.text();
  let json = null;
  try { json = JSON.parse(text); } catch {}
  return { status: r.status, text, json };
}

async function streamed(path, body) {
  const r = await fetch(server.url + path, { method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ ...body, stream: true, stream_options: { include_usage: true } }) });
  assert.equal(r.status, 200, await r.clone().text());
  const events = [];
  let done = false;
  for (const block of (await r.text()).split('\n\n')) {
    if (!block.startsWith('data: ')) continue;
    if (block === 'data: [DONE]') done = true;
    else events.push(JSON.parse(block.slice(6)));
  }
  assert.ok(done, 'the stream ends with [DONE]');
  assert.ok(!events.some((e) => e.error), JSON.stringify(events.find((e) => e.error)));
  return fromEvents(events);
}

async function metrics() {
  const text = await (await fetch(server.url + '/metrics')).text();
  const m = {};
  for (const line of text.split('\n')) {
    const x = /^([a-z_]+(?:\{[^}]*\})?) (\S+)$/.exec(line);
    if (x) m[x[1]] = Number(x[2]);
  }
  return m;
}

// Pool bytes in use beyond the prefix checkpoints' (a slot each, their blocks counted once).
function beyondCheckpoints(m) {
  const used = Object.entries(m).filter(([k]) => k.startsWith('strata_pool_bytes_used{')).reduce((a, [, v]) => a + v, 0);
  return used - m.strata_prefix_cache_checkpoints * SLOT - m.strata_prefix_cache_blocks * BLOCK;
}

// The gauges once the engine is idle: prefix checkpoints are published at the end of the
// engine step that ended the last request, a moment after its last event.
async function settled() {
  let m;
  for (let i = 0; i < 50; ++i) {
    m = await metrics();
    if (m.strata_requests_running === 0 && m.strata_requests_waiting === 0 && beyondCheckpoints(m) === 0) break;
    await new Promise((res) => setTimeout(res, 100));
  }
  return m;
}

const ids = (n, salt) => Array.from({ length: n }, (_, i) => 1000 + ((i * 7919 + salt * 104729) % 90000));
// Sixteen requests of different lengths, the pool's six slots twice over and more. Every prompt
// fits one block (30-119 tokens) and most requests grow past it (60-159 new tokens): six
// admitted together hold at most six blocks, and three of them growing overflow the 8.5, so the
// newest is preempted whether the burst arrives at once (all 16 waiting before the first step)
// or over the first steps. Blocks of finished and preempted requests are freed below live ones,
// so the pool also refuses slots that the byte budget allows (its geometry).
const burst = Array.from({ length: 16 }, (_, i) => {
  const common = { max_tokens: 60 + ((i * 37) % 100), ignore_eos: true, ...(i % 2 ? { temperature: 0.8, seed: i } : { temperature: 0 }) };
  if (i % 4 === 3) return ['/v1/chat/completions', { ...common, messages: [{ role: 'user', content: 'kalo miter songa '.repeat(3 + (i >> 2)) }] }];
  return ['/v1/completions', { ...common, prompt: ids(30 + ((i * 97) % 90), i + 1), ...(i % 5 === 1 ? { logprobs: 2 } : {}) }];
});

test('a request whose cache cannot fit the pool is a 400 naming the pool, and serving goes on', async () => {
  const cases = [
    ['/v1/completions', { prompt: ids(50, 9), max_tokens: CONTEXT - 100 }],
    ['/v1/chat/completions', { messages: [{ role: 'user', content: 'hello' }] }],  // max_tokens: the rest of the context
  ];
  for (const [path, body] of cases) {
    const r = await post(path, body);
    assert.equal(r.status, 400, r.text);
    assert.equal(r.json?.error?.type, 'invalid_request_error', r.text);
    assert.match(r.json.error.message, new RegExp(`more than the pool's ${POOL}\\b`), r.text);
  }
  const ok = await post('/v1/completions', { prompt: ids(20, 9), max_tokens: 4, temperature: 0 });
  assert.equal(ok.status, 200, ok.text);
  assert.equal((await fetch(server.url + '/health')).status, 200);
});

test('a burst that outgrows the pool is preempted and still gives every request its output alone', async () => {
  const alone = [];
  for (const [path, body] of burst) {
    const r = await post(path, body);
    assert.equal(r.status, 200, r.text);
    alone.push(fromResponse(r.json));
  }
  const before = await settled();
  assert.equal(beyondCheckpoints(before), 0);
  // Streamed and whole alike: the even ones stream.
  const outs = await Promise.all(burst.map(([path, body], i) =>
    i % 2 === 0 ? streamed(path, body) : post(path, body).then((r) => {
      assert.equal(r.status, 200, r.text);
      return fromResponse(r.json);
    })));
  outs.forEach((o, i) => assert.equal(o, alone[i], `request ${i} in the burst differs from alone`));
  const m = await settled();
  assert.ok(m.strata_preemptions_total > before.strata_preemptions_total, `preemptions: ${m.strata_preemptions_total}`);
  assert.ok(m.strata_recomputed_tokens_total > 0);
  assert.equal(m['strata_engine_requests_total{outcome="error"}'], 0);
  assert.equal(m.strata_requests_running, 0);
  assert.equal(m.strata_requests_waiting, 0);
  assert.equal(beyondCheckpoints(m), 0, 'the pool holds its prefix checkpoints and nothing else');
  assert.ok(!Object.keys(m).some((k) => /^strata_http_requests_total\{.*status="5/.test(k)), '5xx answers');
  assert.equal((await fetch(server.url + '/health')).status, 200);
});
