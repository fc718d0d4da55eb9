// End-to-end test of `strata serve` with the official OpenAI client (node --test).
// Environment: STRATA_BINARY (the strata executable), STRATA_MODEL_DIR (a flash-tiny model).
// Servers listen on 127.0.0.1 at a port they pick (--port 0) and are stopped by the test.
// The model has random weights: tests compare shapes, determinism and equality, not content.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { startStrataServe } from './start_server.mjs';

const require = createRequire(import.meta.url);
const OpenAI = require('./npm/node_modules/openai').default;

const BIN = process.env.STRATA_BINARY;
const MODEL_DIR = process.env.STRATA_MODEL_DIR;
const KEY = 'test-key';
const NAME = 'flash-tiny';
const CONTEXT = 1024;

function startServer(extra = []) {
  return startStrataServe(BIN, ['--model', MODEL_DIR, '--api-key', KEY, '--model-name', NAME,
    '--max-context', String(CONTEXT), ...extra]);
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

test('chat: tool_choice required or named forces calls with schema-shaped arguments', async () => {
  const tools = [
    { type: 'function', function: { name: 'get_weather', description: 'Weather for a city',
      parameters: { type: 'object', properties: { city: { enum: ['Oslo', 'Lima'] }, days: { type: 'integer' } }, required: ['city'] } } },
    { type: 'function', function: { name: 'get_time' } },
  ];
  const req = { model: NAME, messages: user('Weather in Oslo?'), tools, max_tokens: 200, temperature: 1 };
  const check = (c, names) => {
    assert.equal(c.finish_reason, 'tool_calls', JSON.stringify(c.message));
    assert.ok(c.message.tool_calls.length >= 1);
    for (const t of c.message.tool_calls) {
      assert.ok(names.includes(t.function.name), t.function.name);
      const args = JSON.parse(t.function.arguments);
      if (t.function.name === 'get_weather') {
        assert.ok(['Oslo', 'Lima'].includes(args.city), t.function.arguments);
        if ('days' in args) assert.ok(Number.isInteger(args.days));
      } else {
        assert.deepEqual(args, {});
      }
    }
  };
  for (const seed of [1, 2]) {
    const r = await client.chat.completions.create({ ...req, seed, tool_choice: 'required' });
    check(r.choices[0], ['get_weather', 'get_time']);
    const s = await collect(await client.chat.completions.create({ ...req, seed, tool_choice: 'required', stream: true }));
    assert.equal(s.finish[0], 'tool_calls');
  }
  const named = await client.chat.completions.create({ ...req, seed: 3, tool_choice: { type: 'function', function: { name: 'get_time' } } });
  check(named.choices[0], ['get_time']);
  // what the grammar cannot enforce is named
  const bad = [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { d: { type: 'string', format: 'date' } } } } }];
  const r = await raw('/v1/chat/completions', { body: JSON.stringify({ ...req, tools: bad, tool_choice: 'required' }) });
  assertError(r, 400, 'tool_choice');
  assert.match(r.json.error.message, /'format'/);
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

test('logit_bias: bans and forces tokens, deterministic, checked', async () => {
  const tokenize = async (content) => (await raw('/tokenize', { body: JSON.stringify({ content }) })).json.tokens;
  const [hello] = await tokenize(' hello');
  // +100 forces the token at every step, greedy or not, chat or completions
  const forced = await client.completions.create({ model: NAME, prompt: 'Once upon a time', max_tokens: 3, temperature: 0,
    logit_bias: { [hello]: 100 } });
  assert.equal(forced.choices[0].text, ' hello hello hello');
  const sampled = await client.chat.completions.create({ model: NAME, messages: user('Say something'), max_tokens: 3,
    temperature: 1.2, seed: 5, logit_bias: { [hello]: 100 } });
  assert.equal(sampled.choices[0].message.content, ' hello hello hello');
  // -100 bans: the greedy text's first token is gone; the biased request is as deterministic as any
  const base = { model: NAME, prompt: 'Once upon a time', max_tokens: 6, temperature: 0, logprobs: 0 };
  const plain = await client.completions.create(base);
  const first = (await tokenize(plain.choices[0].logprobs.tokens[0]))[0];
  const banned = await client.completions.create({ ...base, logit_bias: { [first]: -100 } });
  assert.notEqual(banned.choices[0].logprobs.tokens[0], plain.choices[0].logprobs.tokens[0]);
  const again = await client.completions.create({ ...base, logit_bias: { [first]: -100 } });
  assert.equal(again.choices[0].text, banned.choices[0].text);
  const streamed = await collect(await client.completions.create({ ...base, logprobs: undefined, logit_bias: { [first]: -100 }, stream: true }));
  assert.equal(streamed.content[0], banned.choices[0].text);
  // bad input names the field
  for (const logit_bias of [{ 99999999: 1 }, { [hello]: 101 }, { abc: 1 }, { [hello]: 'x' }, [1]]) {
    assertError(await raw('/v1/chat/completions', { body: JSON.stringify({ model: NAME, messages: user('x'), max_tokens: 1, logit_bias }) }),
      400, 'logit_bias');
  }
});

test('unsupported parameters are 400s naming them; echo works', async () => {
  const reject = async (req, param, create = (r) => client.chat.completions.create(r), why = /not supported|cannot be enforced/) => {
    await assert.rejects(create(req), (e) => e.status === 400 && e.error?.param === param && why.test(e.message));
  };
  const chat = { model: NAME, messages: user('Give me JSON'), max_tokens: 2, temperature: 0 };
  await reject({ ...chat, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'string', format: 'email' } } } }, 'response_format', undefined, /'format'/);
  const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: {} } } }];
  const completions = (r) => client.completions.create(r);
  const comp = { model: NAME, prompt: 'Once upon a time', max_tokens: 3, temperature: 0 };
  await reject({ ...comp, best_of: 3 }, 'best_of', completions);
  await reject({ ...comp, suffix: 'The end.' }, 'suffix', completions);
  await reject({ ...comp, echo: true, logprobs: 1 }, 'echo', completions);
  // what changes nothing is accepted
  const text = await client.chat.completions.create({ ...chat, response_format: { type: 'text' } });
  assert.equal(text.choices[0].message.content, (await client.chat.completions.create(chat)).choices[0].message.content);
  const one = await client.completions.create({ ...comp, best_of: 1 });
  // echo: the prompt, then the completion (streamed: with the first chunk)
  const echoed = await client.completions.create({ ...comp, echo: true });
  assert.equal(echoed.choices[0].text, comp.prompt + one.choices[0].text);
  const s = await collect(await client.completions.create({ ...comp, echo: true, stream: true }));
  assert.equal(s.content[0], echoed.choices[0].text);
  assert.ok(s.chunks[0].choices[0].text.startsWith(comp.prompt));
  const ids = await client.completions.create({ model: NAME, prompt: [19923, 2058], max_tokens: 2, temperature: 0, echo: true });
  assert.ok(ids.choices[0].text.startsWith('Hello world'), ids.choices[0].text);
});

test('response_format: json_schema and json_object decode under a grammar', async () => {
  const schema = {
    type: 'object',
    properties: {
      answer: { enum: ['yes', 'no'] },
      confidence: { type: 'number' },
      tags: { type: 'array', items: { type: 'string', maxLength: 5 }, maxItems: 2 },
      where: { $ref: '#/$defs/place' },
    },
    required: ['answer', 'confidence', 'tags', 'where'],
    additionalProperties: false,
    $defs: { place: { anyOf: [{ type: 'null' }, { type: 'object', properties: { city: { type: 'string', maxLength: 8 } }, required: ['city'] }] } },
  };
  const response_format = { type: 'json_schema', json_schema: { name: 'verdict', schema, strict: true } };
  const shape = (text) => {
    const v = JSON.parse(text);
    assert.deepEqual(Object.keys(v), ['answer', 'confidence', 'tags', 'where']);
    assert.ok(['yes', 'no'].includes(v.answer));
    assert.equal(typeof v.confidence, 'number');
    assert.ok(Array.isArray(v.tags) && v.tags.length <= 2 && v.tags.every((t) => typeof t === 'string'));
    assert.ok(v.where === null || typeof v.where.city === 'string');
  };
  const base = { model: NAME, messages: user('Is it sunny? Answer in JSON.'), max_tokens: 300 };
  for (const seed of [1, 2, 3]) {
    const r = await client.chat.completions.create({ ...base, temperature: 1, seed, response_format });
    assert.equal(r.choices[0].finish_reason, 'stop', r.choices[0].message.content);
    shape(r.choices[0].message.content);
    // streamed: the same text in pieces
    const s = await collect(await client.chat.completions.create({ ...base, temperature: 1, seed, response_format, stream: true }));
    assert.equal(s.content[0], r.choices[0].message.content);
  }
  // n choices each follow the grammar; so does /v1/completions (vLLM's extension)
  const many = await client.chat.completions.create({ ...base, temperature: 1, seed: 9, n: 3, response_format });
  for (const c of many.choices) shape(c.message.content);
  const comp = await client.completions.create({ model: NAME, prompt: 'JSON:', max_tokens: 300, temperature: 1, seed: 4, response_format });
  shape(comp.choices[0].text);
  // json_object: any object. A bias toward '}' (allowed once the object may close) ends it early.
  const close = (await raw('/tokenize', { body: JSON.stringify({ content: '}' }) })).json.tokens;
  assert.equal(close.length, 1);
  const obj = await client.chat.completions.create({ ...base, temperature: 0, response_format: { type: 'json_object' }, logit_bias: { [close[0]]: 100 } });
  assert.equal(obj.choices[0].finish_reason, 'stop');
  const parsed = JSON.parse(obj.choices[0].message.content);
  assert.ok(parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed));
  // bad schemas are named, and nothing was run for them
  for (const [rf, why] of [
    [{ type: 'json_schema', json_schema: { name: 'x', schema: { type: 'integer', minimum: 0 } } }, /'minimum'/],
    [{ type: 'json_schema', json_schema: { name: 'x' } }, /schema/],
    [{ type: 'json_schema', json_schema: { name: 'x', schema: { $ref: 'http://example.com/s.json' } } }, /within the document/],
    [{ type: 'xml' }, /type/],
  ]) {
    const r = await raw('/v1/chat/completions', { body: JSON.stringify({ ...base, response_format: rf }) });
    assertError(r, 400, 'response_format');
    assert.match(r.json.error.message, why);
  }
});

test('/tokenize and /detokenize (llama.cpp shapes)', async () => {
  const t = await raw('/tokenize', { body: JSON.stringify({ content: 'Hello world' }) });
  assert.equal(t.status, 200, t.text);
  assert.ok(t.json.tokens.length >= 2 && t.json.tokens.every(Number.isInteger));
  const p = await raw('/tokenize', { body: JSON.stringify({ content: 'Hello world', with_pieces: true, add_special: true }) });
  assert.equal(p.json.tokens.length, t.json.tokens.length + 1);  // BOS
  assert.deepEqual(p.json.tokens.slice(1).map((x) => x.id), t.json.tokens);
  assert.equal(p.json.tokens.slice(1).map((x) => x.piece).join(''), 'Hello world');
  const d = await raw('/detokenize', { body: JSON.stringify({ tokens: t.json.tokens }) });
  assert.deepEqual(d.json, { content: 'Hello world' });
  // the prompt of a completion is the same tokens
  const c = await client.completions.create({ model: NAME, prompt: t.json.tokens, max_tokens: 1 });
  assert.equal(c.usage.prompt_tokens, t.json.tokens.length);
  assertError(await raw('/detokenize', { body: JSON.stringify({ tokens: [1, 99999999] }) }), 400, 'tokens');
  assertError(await raw('/tokenize', { body: JSON.stringify({ content: 5 }) }), 400, 'content');
  assertError(await raw('/tokenize', { body: JSON.stringify({ content: 'x' }), key: null }), 401);
});

test('CORS, public metrics and JSON request logs', async () => {
  const origin = 'http://app.example:5173';
  const s = await startServer(['--cors-origin', origin, '--cors-origin', 'http://other.example', '--metrics-public', '--log-format', 'json']);
  try {
    const pre = await fetch(s.url + '/v1/chat/completions', { method: 'OPTIONS', headers: {
      Origin: origin, 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'authorization,content-type,x-stainless-os' } });
    assert.equal(pre.status, 204);
    assert.equal(pre.headers.get('access-control-allow-origin'), origin);
    assert.match(pre.headers.get('access-control-allow-methods'), /POST/);
    assert.match(pre.headers.get('access-control-allow-headers'), /Authorization, Content-Type/);
    assert.match(pre.headers.get('access-control-allow-headers'), /x-stainless-os/);
    assert.equal(pre.headers.get('access-control-max-age'), '600');
    const denied = await fetch(s.url + '/v1/models', { method: 'OPTIONS', headers: { Origin: 'http://evil.example', 'Access-Control-Request-Method': 'GET' } });
    assert.equal(denied.status, 403);
    assert.equal(denied.headers.get('access-control-allow-origin'), null);
    const auth = { Authorization: 'Bearer ' + KEY };
    const models = await fetch(s.url + '/v1/models', { headers: { ...auth, Origin: origin } });
    assert.equal(models.status, 200);
    assert.equal(models.headers.get('access-control-allow-origin'), origin);
    const noKey = await fetch(s.url + '/v1/models', { headers: { Origin: origin } });
    assert.equal(noKey.status, 401);
    assert.equal(noKey.headers.get('access-control-allow-origin'), origin);  // the page can read the error
    const stream = await fetch(s.url + '/v1/chat/completions', { method: 'POST', headers: { ...auth, Origin: origin, 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: NAME, messages: user('Hi'), max_tokens: 2, stream: true }) });
    assert.equal(stream.headers.get('access-control-allow-origin'), origin);
    assert.match(await stream.text(), /data: \[DONE\]/);
    const m = await fetch(s.url + '/metrics');  // no key
    assert.equal(m.status, 200);
    assert.match(await m.text(), /strata_http_requests_total/);
    // the official client reads the request id header
    const sc = new OpenAI({ baseURL: s.url + '/v1', apiKey: KEY, maxRetries: 0 });
    const r = await sc.chat.completions.create({ model: NAME, messages: user('Hi'), max_tokens: 2, temperature: 0 });
    assert.equal(r._request_id, r.id);
    await assert.rejects(sc.chat.completions.create({ model: NAME, messages: user('Hi'), temperature: 9 }), (e) => e.status === 400);
    await new Promise((res) => setTimeout(res, 200));
    const lines = s.err.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
    const done = lines.find((l) => l.event === 'request' && l.id === r.id);
    assert.ok(done, s.err);
    assert.equal(done.status, 200);
    assert.equal(done.path, '/v1/chat/completions');
    assert.equal(done.completion_tokens, r.usage.completion_tokens);
    assert.equal(done.prompt_tokens, r.usage.prompt_tokens);
    assert.ok(done.ttft_ms > 0 && done.total_ms >= done.ttft_ms, JSON.stringify(done));
    assert.equal(done.outcome, 'ok');
    const err = lines.find((l) => l.event === 'error' && l.param === 'temperature');
    assert.ok(err && err.status === 400 && /temperature/.test(err.message), s.err);
  } finally {
    s.proc.kill('SIGTERM');
    await s.exited;
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
  for (const r of results) {
    if (r.status !== 'rejected') continue;
    assert.equal(r.reason.error?.code ?? r.reason.code, 'queue_full');
    assert.match(r.reason.headers['retry-after'], /^[1-9]\d*$/);
  }

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
