// End-to-end test of `strata serve` with the official OpenAI client (node --test).
// Environment: STRATA_BINARY (the strata executable), STRATA_MODEL_DIR (a flash-tiny model).
// Servers listen on 127.0.0.1 at a port they pick (--port 0) and are stopped by the test.
// The model has random weights: tests compare shapes, determinism and equality, not content.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const OpenAI = require('./npm/node_modules/openai').default;

const BIN = process.env.STRATA_BINARY;
const MODEL_DIR = process.env.STRATA_MODEL_DIR;
const KEY = 'test-key';
const NAME = 'flash-tiny';
const CONTEXT = 1024;

// Starts a server; resolves with {url, proc, exited} once it prints its address.
function startServer(extra = []) {
  const args = ['serve', '--model', MODEL_DIR, '--host', '127.0.0.1', '--port', '0', '--api-key', KEY,
    '--model-name', NAME, '--max-context', String(CONTEXT), ...extra];
  const proc = spawn(BIN, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal, err })));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('server did not start: ' + err)), 60000);
    proc.stderr.on('data', (d) => {
      err += d;
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(err);
      if (m && !proc.started) {
        proc.started = true;
        clearTimeout(timer);
        resolve({ url: m[1], proc, exited });
      }
    });
    proc.on('exit', () => reject(new Error('server exited: ' + err)));
  });
}

const server = await startServer(['--max-running', '8', '--max-queue', '64', '--max-body-bytes', '65536']);
after(async () => {
  server.proc.kill('SIGTERM');
  await server.exited;
});
const client = new OpenAI({ baseURL: server.url + '/v1', apiKey: KEY, maxRetries: 0, timeout: 60000 });
const user = (content) => [{ role: 'user', content }];

async function raw(path, { method = 'POST', body, key = KEY, headers = {} } = {}) {
  const h = { 'Content-Type': 'application/json', ...headers };
  if (key) h.Authorization = 'Bearer ' + key;
  const r = await fetch(server.url + path, { method, headers: h, body });
  const text = await r.text();
  let json = null;
  try { json = JSON.parse(text); } catch {}
  return { status: r.status, text, json };
}

function assertError(r, status, param) {
  assert.equal(r.status, status, r.text);
  assert.ok(r.json && r.json.error, r.text);
  for (const k of ['message', 'type', 'param', 'code']) assert.ok(k in r.json.error, `${k} in ${r.text}`);
  assert.equal(typeof r.json.error.message, 'string');
  if (param !== undefined) assert.equal(r.json.error.param, param, r.text);
}

async function metrics() {
  const r = await raw('/metrics', { method: 'GET' });
  assert.equal(r.status, 200);
  return r.text;
}
function metric(text, name) {
  let sum = null;
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = /^([a-z_:]+)(\{[^}]*\})? (\S+)$/.exec(line);
    if (m && (m[1] + (m[2] || '')) === name) return Number(m[3]);
    if (m && m[1] === name) sum = (sum ?? 0) + Number(m[3]);
  }
  return sum;
}

async function collect(stream) {
  const out = { chunks: [], content: {}, reasoning: {}, finish: {}, tool_calls: {}, usage: null };
  for await (const c of stream) {
    out.chunks.push(c);
    if (c.usage) out.usage = c.usage;
    for (const ch of c.choices) {
      const i = ch.index;
      const d = ch.delta ?? {};
      out.content[i] = (out.content[i] ?? '') + (d.content ?? ch.text ?? '');
      if (d.reasoning_content) out.reasoning[i] = (out.reasoning[i] ?? '') + d.reasoning_content;
      for (const t of d.tool_calls ?? []) (out.tool_calls[i] ??= []).push(t);
      if (ch.finish_reason) out.finish[i] = ch.finish_reason;
    }
  }
  return out;
}

test('models and health', async () => {
  const models = await client.models.list();
  assert.equal(models.data[0].id, NAME);
  const h = await raw('/health', { method: 'GET', key: null });
  assert.equal(h.status, 200);
});

test('chat: shape, usage, greedy determinism, streaming equals non-streaming', async () => {
  const req = { model: NAME, messages: user('Hello there'), max_tokens: 8, temperature: 0 };
  const a = await client.chat.completions.create(req);
  assert.equal(a.object, 'chat.completion');
  assert.match(a.id, /^chatcmpl-/);
  assert.equal(a.model, NAME);
  assert.equal(a.choices.length, 1);
  const c = a.choices[0];
  assert.equal(c.message.role, 'assistant');
  assert.equal(typeof c.message.content, 'string');
  assert.ok(['stop', 'length'].includes(c.finish_reason));
  assert.ok(a.usage.prompt_tokens > 0);
  assert.ok(a.usage.completion_tokens >= 1 && a.usage.completion_tokens <= 8);
  assert.equal(a.usage.total_tokens, a.usage.prompt_tokens + a.usage.completion_tokens);
  const b = await client.chat.completions.create(req);
  assert.equal(b.choices[0].message.content, c.message.content);
  const s = await collect(await client.chat.completions.create({ ...req, stream: true, stream_options: { include_usage: true } }));
  assert.equal(s.chunks[0].object, 'chat.completion.chunk');
  assert.equal(s.chunks[0].choices[0].delta.role, 'assistant');
  assert.equal(s.content[0], c.message.content);
  assert.equal(s.finish[0], c.finish_reason);
  assert.deepEqual(s.usage.completion_tokens, a.usage.completion_tokens);
  assert.equal(s.chunks.at(-1).choices.length, 0);  // the usage chunk
  // max_completion_tokens is the newer name
  const m = await client.chat.completions.create({ model: NAME, messages: user('Hi'), max_completion_tokens: 2, temperature: 0 });
  assert.ok(m.usage.completion_tokens <= 2);
});

test('chat: sampling parameters, stop, seed, logprobs', async () => {
  const base = { model: NAME, messages: user('Tell me a story'), max_tokens: 6 };
  const s1 = await client.chat.completions.create({ ...base, temperature: 0.9, top_p: 0.9, top_k: 50, min_p: 0.01, seed: 7,
    presence_penalty: 0.5, frequency_penalty: 0.5 });
  const s2 = await client.chat.completions.create({ ...base, temperature: 0.9, top_p: 0.9, top_k: 50, min_p: 0.01, seed: 7,
    presence_penalty: 0.5, frequency_penalty: 0.5 });
  assert.equal(s1.choices[0].message.content, s2.choices[0].message.content);  // same seed, same text
  const lp = await client.chat.completions.create({ ...base, temperature: 0, logprobs: true, top_logprobs: 3 });
  const content = lp.choices[0].logprobs.content;
  assert.equal(content.length, lp.usage.completion_tokens);  // one entry per generated token
  for (const e of content) {
    assert.equal(typeof e.token, 'string');
    assert.ok(e.logprob <= 0);
    assert.ok(Array.isArray(e.bytes));
    assert.equal(e.top_logprobs.length, 3);
    assert.ok(e.top_logprobs[0].logprob >= e.top_logprobs[2].logprob);
  }
  // a stop string cut from the greedy text ends it there
  const full = (await client.chat.completions.create({ ...base, temperature: 0 })).choices[0].message.content;
  if (full.length > 4) {
    const stop = full.slice(2, 4);
    const cut = await client.chat.completions.create({ ...base, temperature: 0, stop: [stop] });
    assert.equal(cut.choices[0].finish_reason, 'stop');
    assert.equal(cut.choices[0].message.content, full.slice(0, full.indexOf(stop)));
  }
});

test('chat: n > 1', async () => {
  const r = await client.chat.completions.create({ model: NAME, messages: user('Pick a word'), max_tokens: 4, n: 3, temperature: 1, seed: 11 });
  assert.equal(r.choices.length, 3);
  assert.deepEqual(r.choices.map((c) => c.index), [0, 1, 2]);
  const again = await client.chat.completions.create({ model: NAME, messages: user('Pick a word'), max_tokens: 4, n: 3, temperature: 1, seed: 11 });
  assert.deepEqual(again.choices.map((c) => c.message.content), r.choices.map((c) => c.message.content));
  const g = await client.chat.completions.create({ model: NAME, messages: user('Pick a word'), max_tokens: 4, n: 2, temperature: 0 });
  assert.equal(g.choices[0].message.content, g.choices[1].message.content);
  const s = await collect(await client.chat.completions.create({ model: NAME, messages: user('Pick a word'), max_tokens: 4, n: 2, temperature: 0, stream: true }));
  assert.equal(s.content[0], g.choices[0].message.content);
  assert.equal(s.content[1], g.choices[1].message.content);
});

test('chat: tools request and response shapes', async () => {
  const tools = [{ type: 'function', function: { name: 'get_weather', description: 'Weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];
  const req = { model: NAME, messages: user('Weather in Oslo?'), tools, tool_choice: 'auto', max_tokens: 8, temperature: 0 };
  const r = await client.chat.completions.create(req);
  const c = r.choices[0];
  assert.ok(['stop', 'length', 'tool_calls'].includes(c.finish_reason));
  for (const t of c.message.tool_calls ?? []) {
    assert.equal(t.type, 'function');
    assert.equal(typeof t.function.name, 'string');
    JSON.parse(t.function.arguments);
  }
  const s = await collect(await client.chat.completions.create({ ...req, stream: true }));
  assert.equal(s.content[0] ?? '', c.message.content ?? '');
  assert.equal(s.finish[0], c.finish_reason);
  // a conversation with an earlier tool call and its result goes through the chat encoding
  const history = [
    { role: 'user', content: 'Weather in Oslo?' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: '5 C, cloudy' },
  ];
  const h = await client.chat.completions.create({ model: NAME, messages: history, tools, max_tokens: 4, temperature: 0 });
  assert.equal(h.choices.length, 1);
  const none = await client.chat.completions.create({ ...req, tool_choice: 'none' });
  assert.ok(none.usage.prompt_tokens < r.usage.prompt_tokens);  // tools left out of the prompt
});

test('chat: reasoning (thinking on) has reasoning_content', async () => {
  const r = await client.chat.completions.create({ model: NAME, messages: user('Think about 2+2'), max_tokens: 6, temperature: 0, thinking: true });
  assert.equal(typeof r.choices[0].message.reasoning_content, 'string');
  const off = await client.chat.completions.create({ model: NAME, messages: user('Think about 2+2'), max_tokens: 6, temperature: 0 });
  assert.equal(off.choices[0].message.reasoning_content, undefined);
  const eff = await client.chat.completions.create({ model: NAME, messages: user('Think about 2+2'), max_tokens: 4, temperature: 0, reasoning_effort: 'max' });
  assert.equal(typeof eff.choices[0].message.reasoning_content, 'string');
  assert.ok(eff.usage.prompt_tokens > r.usage.prompt_tokens);  // the Think-Max prefix
  const kw = await client.chat.completions.create({ model: NAME, messages: user('Think about 2+2'), max_tokens: 6, temperature: 0,
    chat_template_kwargs: { thinking: true } });
  assert.equal(kw.choices[0].message.reasoning_content, r.choices[0].message.reasoning_content);
  const s = await collect(await client.chat.completions.create({ model: NAME, messages: user('Think about 2+2'), max_tokens: 6, temperature: 0, thinking: true, stream: true }));
  assert.equal(s.reasoning[0] ?? '', r.choices[0].message.reasoning_content);
  assert.equal(s.content[0] ?? '', r.choices[0].message.content ?? '');
  // earlier turns may carry reasoning_content
  const multi = await client.chat.completions.create({ model: NAME, max_tokens: 2, temperature: 0, thinking: true,
    messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b', reasoning_content: 'r' }, { role: 'user', content: 'c' }] });
  assert.equal(multi.choices.length, 1);
});

test('completions: text and token-id prompts, streaming, logprobs', async () => {
  const r = await client.completions.create({ model: NAME, prompt: 'Once upon a time', max_tokens: 6, temperature: 0, logprobs: 2 });
  assert.equal(r.object, 'text_completion');
  assert.match(r.id, /^cmpl-/);
  const c = r.choices[0];
  assert.equal(typeof c.text, 'string');
  assert.equal(c.logprobs.tokens.length, c.logprobs.token_logprobs.length);
  assert.equal(c.logprobs.top_logprobs[0] && Object.keys(c.logprobs.top_logprobs[0]).length <= 2, true);
  const s = await collect(await client.completions.create({ model: NAME, prompt: 'Once upon a time', max_tokens: 6, temperature: 0, stream: true }));
  assert.equal(s.content[0], c.text);
  assert.equal(s.chunks[0].object, 'text_completion');
  const ids = await client.completions.create({ model: NAME, prompt: [1, 2, 3, 4], max_tokens: 3, temperature: 0 });
  assert.equal(ids.usage.prompt_tokens, 4);
  const many = await client.completions.create({ model: NAME, prompt: ['a b', 'c d'], max_tokens: 2, temperature: 0, n: 2 });
  assert.equal(many.choices.length, 4);
});

test('cancellation mid-stream frees the request', async () => {
  // the same prompt ran to completion first, so a prefix cache holds nothing new afterwards
  const req = { model: NAME, messages: user('Write a long essay'), max_tokens: 4, temperature: 0 };
  await client.chat.completions.create(req);
  const before = await metrics();
  const idleUsed = metric(before, 'strata_pool_bytes_used');
  const cancelledBefore = metric(before, 'strata_engine_requests_total{outcome="cancelled"}');
  const stream = await client.chat.completions.create({ ...req, max_tokens: 600, stream: true });
  let n = 0;
  for await (const _ of stream) if (++n >= 3) break;  // leaving the loop aborts the request
  let m;
  const until = Date.now() + 15000;
  do {
    await new Promise((r) => setTimeout(r, 100));
    m = await metrics();
  } while (Date.now() < until && !(metric(m, 'strata_engine_requests_total{outcome="cancelled"}') > cancelledBefore &&
           metric(m, 'strata_requests_running') === 0 && metric(m, 'strata_pool_bytes_used') === idleUsed));
  assert.equal(metric(m, 'strata_engine_requests_total{outcome="cancelled"}'), cancelledBefore + 1, m);
  assert.equal(metric(m, 'strata_requests_running'), 0);
  assert.equal(metric(m, 'strata_pool_bytes_used'), idleUsed, m);
  for (const name of ['strata_requests_waiting', 'strata_prompt_tokens_total', 'strata_generation_tokens_total',
    'strata_prefix_cache_hit_rate', 'strata_pool_bytes_total', 'strata_time_to_first_token_seconds_count',
    'strata_inter_token_latency_seconds_count'])
    assert.notEqual(metric(m, name), null, name);
  assert.match(m, /strata_http_requests_total\{route="\/v1\/chat\/completions",status="200"\} \d+/);
});

test('32 concurrent streams equal sequential greedy runs', async () => {
  const prompts = Array.from({ length: 32 }, (_, i) => `Item ${i}: describe the number ${i * 7}`);
  const req = (p) => ({ model: NAME, messages: user(p), max_tokens: 6, temperature: 0 });
  const sequential = [];
  for (const p of prompts) sequential.push((await client.chat.completions.create(req(p))).choices[0].message.content);
  const streams = await Promise.all(prompts.map(async (p) => collect(await client.chat.completions.create({ ...req(p), stream: true }))));
  assert.deepEqual(streams.map((s) => s.content[0] ?? ''), sequential);
  for (const s of streams) assert.ok(['stop', 'length'].includes(s.finish[0]));
});

test('a speculative server (--spec-tokens 3) gives the same outputs and reports acceptance', async () => {
  const spec = await startServer(['--spec-tokens', '3', '--max-running', '4']);
  try {
    const sc = new OpenAI({ baseURL: spec.url + '/v1', apiKey: KEY, maxRetries: 0, timeout: 60000 });
    const reqs = [
      { model: NAME, messages: user('Count to twenty'), max_tokens: 20, temperature: 0 },
      { model: NAME, messages: user('A story about a cat'), max_tokens: 20, temperature: 0.8, seed: 3, top_p: 0.9 },
      { model: NAME, prompt: 'Once upon a time', max_tokens: 20, temperature: 0 },
    ];
    const run = async (c, r) => (r.prompt ? (await c.completions.create(r)).choices[0].text
      : (await c.chat.completions.create(r)).choices[0].message.content);
    const plain = [], fast = [];
    for (const r of reqs) plain.push(await run(client, r));
    for (const r of reqs) fast.push(await run(sc, r));
    const streamed = await Promise.all(reqs.slice(0, 2).map(async (r) => collect(await sc.chat.completions.create({ ...r, stream: true }))));
    assert.deepEqual(fast, plain);
    assert.deepEqual(streamed.map((s) => s.content[0] ?? ''), plain.slice(0, 2));
    const r = await fetch(spec.url + '/metrics', { headers: { Authorization: 'Bearer ' + KEY } });
    const m = await r.text();
    assert.ok(metric(m, 'strata_spec_rounds_total') > 0, m);
    assert.ok(metric(m, 'strata_spec_draft_tokens_total') > 0, m);
    for (const name of ['strata_spec_accepted_tokens_total', 'strata_spec_acceptance_rate', 'strata_spec_mean_accepted_length'])
      assert.notEqual(metric(m, name), null, name);
  } finally {
    spec.proc.kill('SIGTERM');
    const e = await spec.exited;
    assert.equal(e.code, 0, e.err);
  }
});

test('bad input is answered in the OpenAI error shape', async () => {
  const chat = (o) => JSON.stringify({ model: NAME, messages: user('x'), max_tokens: 2, ...o });
  assertError(await raw('/v1/chat/completions', { body: '{"messages": [' }), 400);
  assertError(await raw('/v1/chat/completions', { body: chat({ temperature: 'hot' }) }), 400, 'temperature');
  assertError(await raw('/v1/chat/completions', { body: chat({ n: 'two' }) }), 400, 'n');
  assertError(await raw('/v1/chat/completions', { body: chat({ messages: 'hi' }) }), 400, 'messages');
  assertError(await raw('/v1/chat/completions', { body: chat({ messages: [] }) }), 400, 'messages');
  assertError(await raw('/v1/chat/completions', { body: chat({ model: 'gpt-nope' }) }), 404, 'model');
  assertError(await raw('/v1/chat/completions', { body: chat({ max_tokens: CONTEXT + 1 }) }), 400, 'max_tokens');
  const long = await raw('/v1/completions', { body: JSON.stringify({ model: NAME, prompt: Array(CONTEXT + 5).fill(100), max_tokens: 1 }) });
  assertError(long, 400, 'prompt');
  assert.equal(long.json.error.code, 'context_length_exceeded');
  const longChat = await raw('/v1/chat/completions', { body: chat({ messages: user('word '.repeat(CONTEXT + 10)) }) });
  assertError(longChat, 400, 'messages');
  assertError(await raw('/v1/completions', { body: JSON.stringify({ model: NAME, prompt: [1, 2, 10000000] }) }), 400, 'prompt');
  assertError(await raw('/v1/completions', { body: JSON.stringify({ model: NAME, prompt: [1, -2] }) }), 400, 'prompt');
  assertError(await raw('/v1/chat/completions', { body: chat({ pad: 'x'.repeat(70000) }) }), 413);
  assertError(await raw('/v1/chat/completions', { body: chat({}), key: 'wrong' }), 401);
  assertError(await raw('/v1/models', { method: 'GET', key: null }), 401);
  // the client library sees the same statuses
  await assert.rejects(client.chat.completions.create({ model: 'gpt-nope', messages: user('x') }), (e) => e.status === 404);
  await assert.rejects(client.chat.completions.create({ model: NAME, messages: [] }), (e) => e.status === 400);
  const bad = new OpenAI({ baseURL: server.url + '/v1', apiKey: 'wrong', maxRetries: 0 });
  await assert.rejects(bad.models.list(), (e) => e.status === 401);
  // still serving
  const ok = await client.chat.completions.create({ model: NAME, messages: user('still there?'), max_tokens: 2, temperature: 0 });
  assert.equal(ok.choices.length, 1);
});

test('full queue answers 429; SIGTERM drains in-flight streams and exits 0', async () => {
  const small = await startServer(['--max-running', '1', '--max-queue', '1']);
  const c = new OpenAI({ baseURL: small.url + '/v1', apiKey: KEY, maxRetries: 0, timeout: 60000 });
  const results = await Promise.allSettled(Array.from({ length: 6 }, (_, i) =>
    c.chat.completions.create({ model: NAME, messages: user('q' + i), max_tokens: 24, temperature: 0 })));
  const statuses = results.map((r) => (r.status === 'fulfilled' ? 200 : r.reason.status));
  assert.ok(statuses.includes(429), JSON.stringify(statuses));
  assert.ok(statuses.includes(200), JSON.stringify(statuses));
  for (const r of results) if (r.status === 'rejected') assert.equal(r.reason.error?.code ?? r.reason.code, 'queue_full');

  const stream = await c.chat.completions.create({ model: NAME, messages: user('drain me'), max_tokens: 24, temperature: 0, stream: true });
  const it = stream[Symbol.asyncIterator]();
  await it.next();  // the request is running
  small.proc.kill('SIGTERM');
  let finish = null;
  for (let x = await it.next(); !x.done; x = await it.next()) finish = x.value.choices[0]?.finish_reason ?? finish;
  assert.ok(['stop', 'length'].includes(finish), 'the in-flight stream finished: ' + finish);
  const { code, err } = await small.exited;
  assert.equal(code, 0, err);
});
