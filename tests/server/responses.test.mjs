// End-to-end test of `strata serve`'s Responses API (POST /v1/responses) with the official
// OpenAI client's client.responses.create (node --test).
// Environment: STRATA_BINARY (the strata executable), STRATA_MODEL_DIR (a flash-tiny model).
// The model has random weights: tests compare with /v1/chat/completions for the same
// conversation, and check shapes, not content.
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
const ORIGIN = 'http://app.example:5173';

const server = await startStrataServe(BIN, ['--model', MODEL_DIR, '--api-key', KEY, '--model-name', NAME,
  '--max-context', '1024', '--max-running', '8', '--cors-origin', ORIGIN, '--log-format', 'json']);
after(async () => {
  server.proc.kill('SIGTERM');
  await server.exited;
});
const client = new OpenAI({ baseURL: server.url + '/v1', apiKey: KEY, maxRetries: 0, timeout: 60000 });
const user = (content) => [{ role: 'user', content }];
const chat = (req) => client.chat.completions.create({ model: NAME, temperature: 0, ...req });
const respond = (req) => client.responses.create({ model: NAME, temperature: 0, ...req });

async function raw(path, { method = 'POST', body, key = KEY, headers = {} } = {}) {
  const h = { 'Content-Type': 'application/json', ...headers };
  if (key) h.Authorization = 'Bearer ' + key;
  const r = await fetch(server.url + path, { method, headers: h, body });
  const text = await r.text();
  let json = null;
  try { json = JSON.parse(text); } catch {}
  return { status: r.status, text, json, headers: r.headers };
}

async function events(stream) {
  const out = [];
  for await (const e of stream) out.push(e);
  return out;
}

// A stream's invariants: numbered from 0, created first, the final response last, and each
// item's deltas adding up to its output_item.done.
function checkStream(ev) {
  ev.forEach((e, i) => assert.equal(e.sequence_number, i, JSON.stringify(e)));
  assert.equal(ev[0].type, 'response.created');
  assert.equal(ev[0].response.status, 'in_progress');
  assert.equal(ev[1].type, 'response.in_progress');
  const last = ev.at(-1);
  assert.ok(['response.completed', 'response.incomplete'].includes(last.type), last.type);
  const deltas = {};
  const done = [];
  for (const e of ev) {
    if (/^response\.(output_text|reasoning_text|function_call_arguments)\.delta$/.test(e.type))
      deltas[e.item_id] = (deltas[e.item_id] ?? '') + e.delta;
    if (e.type === 'response.output_item.done') {
      assert.equal(e.output_index, done.length);
      done.push(e.item);
      const whole = e.item.type === 'function_call' ? e.item.arguments : e.item.content[0].text;
      assert.equal(deltas[e.item.id] ?? '', whole, e.item.type);
    }
  }
  assert.deepEqual(last.response.output, done);
  return last.response;
}

const outputText = (resp) => resp.output.filter((o) => o.type === 'message')
  .flatMap((o) => o.content.filter((c) => c.type === 'output_text').map((c) => c.text)).join('');

test('responses: text equals chat, response shape, usage, request id', async () => {
  const c = await chat({ messages: user('Hello there'), max_tokens: 8 });
  const r = await respond({ input: 'Hello there', max_output_tokens: 8 });
  assert.equal(r.object, 'response');
  assert.match(r.id, /^resp_/);
  assert.equal(r.model, NAME);
  assert.equal(typeof r.created_at, 'number');
  assert.equal(r.output_text, c.choices[0].message.content);
  assert.equal(r.status, c.choices[0].finish_reason === 'length' ? 'incomplete' : 'completed');
  const msg = r.output.find((o) => o.type === 'message');
  assert.match(msg.id, /^msg_/);
  assert.equal(msg.role, 'assistant');
  assert.deepEqual(msg.content[0].annotations, []);
  assert.equal(r.usage.input_tokens, c.usage.prompt_tokens);
  assert.equal(r.usage.output_tokens, c.usage.completion_tokens);
  assert.equal(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens);
  assert.equal(typeof r.usage.input_tokens_details.cached_tokens, 'number');
  assert.equal(r.usage.output_tokens_details.reasoning_tokens, 0);
  assert.equal(r.temperature, 0);
  assert.equal(r.max_output_tokens, 8);
  assert.equal(r.tool_choice, 'auto');
  assert.deepEqual(r.tools, []);
  assert.equal(r.parallel_tool_calls, true);
  assert.deepEqual(r.text, { format: { type: 'text' } });
  assert.equal(r.store, false);
  // X-Request-Id is the response's id
  const h = await raw('/v1/responses', { body: JSON.stringify({ model: NAME, input: 'Hi', max_output_tokens: 2 }) });
  assert.equal(h.status, 200, h.text);
  assert.equal(h.headers.get('x-request-id'), h.json.id);
});

test('responses: streamed events add up to the non-streamed response', async () => {
  const req = { input: 'Tell me a story', max_output_tokens: 12 };
  const r = await respond(req);
  const ev = await events(await respond({ ...req, stream: true }));
  const final = checkStream(ev);
  assert.equal(outputText(final), r.output_text);
  assert.equal(final.status, r.status);
  assert.deepEqual(final.usage, r.usage);
  const types = ev.map((e) => e.type);
  const textStart = types.indexOf('response.output_item.added');
  assert.deepEqual(types.slice(textStart, textStart + 2), ['response.output_item.added', 'response.content_part.added']);
  for (const t of ['response.output_text.delta', 'response.output_text.done', 'response.content_part.done', 'response.output_item.done'])
    assert.ok(types.includes(t), t);
  const delta = ev.find((e) => e.type === 'response.output_text.delta');
  assert.equal(delta.output_index, 0);
  assert.equal(delta.content_index, 0);
  assert.match(delta.item_id, /^msg_/);
});

test('responses: instructions and multi-turn input items are the chat messages', async () => {
  const c = await chat({ messages: [{ role: 'system', content: 'Be brief.' }, ...user('Hello')], max_tokens: 6 });
  const r = await respond({ instructions: 'Be brief.', input: 'Hello', max_output_tokens: 6 });
  assert.equal(r.output_text, c.choices[0].message.content);
  assert.equal(r.usage.input_tokens, c.usage.prompt_tokens);
  assert.equal(r.instructions, 'Be brief.');
  const turns = [{ role: 'user', content: 'Hi' }, { role: 'assistant', content: 'Hello!' }, { role: 'user', content: 'How are you?' }];
  const c2 = await chat({ messages: turns, max_tokens: 6 });
  const r2 = await respond({ max_output_tokens: 6, input: [
    { role: 'user', content: [{ type: 'input_text', text: 'Hi' }] },
    { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Hello!', annotations: [] }] },
    { role: 'user', content: 'How are you?' }] });
  assert.equal(r2.output_text, c2.choices[0].message.content);
  assert.equal(r2.usage.input_tokens, c2.usage.prompt_tokens);
  // an earlier response's output passed back as input
  const r3 = await respond({ max_output_tokens: 4, input: [...user('Hi'), ...r2.output, ...user('And now?')] });
  assert.equal(r3.status === 'completed' || r3.status === 'incomplete', true);
});

test('responses: reasoning effort gives a reasoning item like chat reasoning_content', async () => {
  const c = await chat({ messages: user('Think about 2+2'), max_tokens: 6, reasoning_effort: 'high' });
  const r = await respond({ input: 'Think about 2+2', max_output_tokens: 6, reasoning: { effort: 'high' } });
  assert.equal(r.usage.input_tokens, c.usage.prompt_tokens);
  const rs = r.output.find((o) => o.type === 'reasoning');
  assert.equal(rs?.content?.[0]?.text ?? '', c.choices[0].message.reasoning_content);
  if (rs) {
    assert.match(rs.id, /^rs_/);
    assert.deepEqual(rs.summary, []);
    assert.equal(rs.content[0].type, 'reasoning_text');
    assert.ok(r.usage.output_tokens_details.reasoning_tokens > 0);
  }
  assert.equal(r.output_text, c.choices[0].message.content ?? '');
  assert.equal(r.reasoning.effort, 'high');
  const ev = await events(await respond({ input: 'Think about 2+2', max_output_tokens: 6, reasoning: { effort: 'high' }, stream: true }));
  const final = checkStream(ev);
  if (rs) assert.ok(ev.some((e) => e.type === 'response.reasoning_text.delta'));
  assert.deepEqual(final.output.map((o) => o.type), r.output.map((o) => o.type));
});

test('responses: text.format json_schema decodes under the grammar', async () => {
  const schema = { type: 'object', properties: { answer: { enum: ['yes', 'no'] }, n: { type: 'integer' } },
    required: ['answer', 'n'], additionalProperties: false };
  for (const seed of [1, 2]) {
    const r = await client.responses.create({ model: NAME, input: 'Is it sunny? Answer in JSON.', max_output_tokens: 200,
      temperature: 1, seed, text: { format: { type: 'json_schema', name: 'verdict', schema, strict: true } } });
    assert.equal(r.status, 'completed', r.output_text);
    const v = JSON.parse(r.output_text);
    assert.deepEqual(Object.keys(v), ['answer', 'n']);
    assert.ok(['yes', 'no'].includes(v.answer));
    assert.ok(Number.isInteger(v.n));
    assert.equal(r.text.format.name, 'verdict');
  }
  const bad = await raw('/v1/responses', { body: JSON.stringify({ model: NAME, input: 'x',
    text: { format: { type: 'json_schema', name: 'x', schema: { type: 'integer', minimum: 0 } } } }) });
  assert.equal(bad.status, 400, bad.text);
  assert.equal(bad.json.error.param, 'text');
  assert.match(bad.json.error.message, /'minimum'/);
});

test('responses: max_output_tokens cuts the response: incomplete', async () => {
  const c = await chat({ messages: user('Write a long essay'), max_tokens: 2 });
  assert.equal(c.choices[0].finish_reason, 'length');
  const r = await respond({ input: 'Write a long essay', max_output_tokens: 2 });
  assert.equal(r.status, 'incomplete');
  assert.deepEqual(r.incomplete_details, { reason: 'max_output_tokens' });
  assert.equal(r.usage.output_tokens, 2);
  assert.equal(r.output_text, c.choices[0].message.content);
  const ev = await events(await respond({ input: 'Write a long essay', max_output_tokens: 2, stream: true }));
  assert.equal(ev.at(-1).type, 'response.incomplete');
  assert.equal(checkStream(ev).incomplete_details.reason, 'max_output_tokens');
});

test('responses: function tools are in the prompt as in chat; forced calls are function_call items', async () => {
  const flat = [{ type: 'function', name: 'get_weather', description: 'Weather for a city', strict: true,
    parameters: { type: 'object', properties: { city: { enum: ['Oslo', 'Lima'] } }, required: ['city'], additionalProperties: false } }];
  const nested = flat.map(({ type, ...fn }) => ({ type, function: fn }));
  const c = await chat({ messages: user('Weather in Oslo?'), tools: nested, max_tokens: 8 });
  const r = await respond({ input: 'Weather in Oslo?', tools: flat, max_output_tokens: 8 });
  assert.equal(r.usage.input_tokens, c.usage.prompt_tokens);
  assert.equal(r.output_text, c.choices[0].message.content ?? '');
  assert.deepEqual(r.tools, flat);
  const none = await respond({ input: 'Weather in Oslo?', tools: flat, tool_choice: 'none', max_output_tokens: 2 });
  assert.ok(none.usage.input_tokens < r.usage.input_tokens);  // tools left out of the prompt
  // required: the output is calls (the tool-call grammar), as function_call items
  const f = await respond({ input: 'Weather in Oslo?', tools: flat, tool_choice: 'required', max_output_tokens: 200, temperature: 1, seed: 1 });
  const calls = f.output.filter((o) => o.type === 'function_call');
  assert.ok(calls.length >= 1, JSON.stringify(f.output));
  for (const fc of calls) {
    assert.match(fc.id, /^fc_/);
    assert.match(fc.call_id, /^call_/);
    assert.equal(fc.name, 'get_weather');
    assert.equal(fc.status, 'completed');
    assert.ok(['Oslo', 'Lima'].includes(JSON.parse(fc.arguments).city), fc.arguments);
  }
  const ev = await events(await respond({ input: 'Weather in Oslo?', tools: flat, tool_choice: 'required', max_output_tokens: 200, temperature: 1, seed: 1, stream: true }));
  const final = checkStream(ev);
  assert.deepEqual(final.output.filter((o) => o.type === 'function_call').map((o) => [o.name, o.arguments]),
    calls.map((o) => [o.name, o.arguments]));
  assert.ok(ev.some((e) => e.type === 'response.function_call_arguments.done'));
  // the calls and their results passed back: the next turn
  const next = await respond({ tools: flat, max_output_tokens: 4, input: [...user('Weather in Oslo?'), ...f.output,
    ...calls.map((fc) => ({ type: 'function_call_output', call_id: fc.call_id, output: '5 C, cloudy' }))] });
  assert.ok(['completed', 'incomplete'].includes(next.status));
});

test('responses: a client that goes away cancels the engine request', async () => {
  const metric = async (name) => {
    const t = (await raw('/metrics', { method: 'GET' })).text;
    const m = new RegExp('^' + name.replace(/[{}"=/.]/g, '\\$&') + ' (\\S+)$', 'm').exec(t);
    return m ? Number(m[1]) : null;
  };
  const before = await metric('strata_engine_requests_total{outcome="cancelled"}');
  const stream = await respond({ input: 'Write a long essay', max_output_tokens: 600, stream: true });
  let n = 0;
  for await (const _ of stream) if (++n >= 4) break;  // leaving the loop aborts the request
  let after;
  const until = Date.now() + 15000;
  do {
    await new Promise((r) => setTimeout(r, 100));
    after = await metric('strata_engine_requests_total{outcome="cancelled"}');
  } while (Date.now() < until && !(after > before && (await metric('strata_requests_running')) === 0));
  assert.equal(after, before + 1);
  const m = (await raw('/metrics', { method: 'GET' })).text;
  assert.match(m, /strata_http_requests_total\{route="\/v1\/responses",status="200"\} \d+/);
  assert.match(m, /strata_http_requests_total\{route="\/v1\/responses",status="400"\} \d+/);
});

test('responses: bad and unsupported requests are 400s naming the field; API key and CORS apply', async () => {
  const cases = [
    [{ input: 'x', previous_response_id: 'resp_123' }, 'previous_response_id'],
    [{ input: 'x', background: true }, 'background'],
    [{ input: 'x', include: ['reasoning.encrypted_content'] }, 'include'],
    [{ input: 'x', truncation: 'auto' }, 'truncation'],
    [{ input: 'x', prompt: { id: 'pmpt_1' } }, 'prompt'],
    [{ input: 'x', tools: [{ type: 'web_search_preview' }] }, 'tools'],
    [{ input: 'x', reasoning: { effort: 'low', summary: 'auto' } }, 'reasoning'],
    [{ input: 'x', parallel_tool_calls: false }, 'parallel_tool_calls'],
    [{ input: 'x', temperature: 3 }, 'temperature'],
    [{ input: 'x', max_output_tokens: 0 }, 'max_output_tokens'],
    [{ input: 'x', max_output_tokens: 5000 }, 'max_output_tokens'],
    [{ input: 'x', text: { format: { type: 'xml' } } }, 'text'],
    [{ input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'data:,' }] }] }, 'input'],
    [{ input: [] }, 'input'],
    [{}, 'input'],
  ];
  for (const [body, param] of cases) {
    await assert.rejects(client.responses.create({ model: NAME, ...body }),
      (e) => e.status === 400 && e.error?.param === param, JSON.stringify(body));
  }
  const nf = await raw('/v1/responses', { body: JSON.stringify({ model: 'gpt-9', input: 'x' }) });
  assert.equal(nf.status, 404);
  assert.equal(nf.json.error.code, 'model_not_found');
  assert.equal((await raw('/v1/responses', { body: '{"input":' })).status, 400);
  assert.equal((await raw('/v1/responses', { body: JSON.stringify({ input: 'x' }), key: null })).status, 401);
  const cors = await raw('/v1/responses', { body: JSON.stringify({ input: 'x', max_output_tokens: 1 }), headers: { Origin: ORIGIN } });
  assert.equal(cors.status, 200);
  assert.equal(cors.headers.get('access-control-allow-origin'), ORIGIN);
  assert.match(cors.headers.get('access-control-expose-headers'), /X-Request-Id/i);
  // the JSON log line of that request
  const logLine = () => server.err.split('\n').find((l) => l.includes(cors.json.id) && l.includes('"event":"request"'));
  for (const until = Date.now() + 5000; !logLine() && Date.now() < until;) await new Promise((r) => setTimeout(r, 50));
  const line = logLine();
  assert.ok(line, server.err.slice(-2000));
  const log = JSON.parse(line);
  assert.equal(log.path, '/v1/responses');
  assert.equal(log.status, 200);
  assert.equal(log.prompt_tokens, cors.json.usage.input_tokens);
  assert.equal(log.completion_tokens, 1);
  assert.equal(log.outcome, 'ok');
});
