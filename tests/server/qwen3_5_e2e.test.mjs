// `strata serve` on a Qwen3.5 checkpoint (qwen3.5-tiny with Qwen3's tokenizer and chat template)
// driven by the official OpenAI client, unchanged: the checkpoint's Jinja template renders the
// prompt, thinking and tools switch it, image content is refused clearly, and a server that
// drafts with the MTP layer answers exactly as one that does not.
// Environment: STRATA_BINARY, STRATA_MODEL_DIR (qwen3.5-tiny), STRATA_NO_MTP_DIR (the same
// checkpoint without its mtp.* tensors).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { startStrataServe } from './start_server.mjs';

const require = createRequire(import.meta.url);
const OpenAI = require('./npm/node_modules/openai').default;

const BIN = process.env.STRATA_BINARY;
const MODEL_DIR = process.env.STRATA_MODEL_DIR;
const NAME = 'qwen3.5-tiny';

function startServer(dir, extra = []) {
  return startStrataServe(BIN, ['--model', dir, '--model-name', NAME, '--max-context', '1024', '--max-running', '4', ...extra]);
}

const plain = await startServer(MODEL_DIR);
const spec = await startServer(MODEL_DIR, ['--speculative']);
after(async () => {
  for (const s of [plain, spec]) s.proc.kill('SIGTERM');
  await Promise.all([plain.exited, spec.exited]);
});
const client = new OpenAI({ baseURL: plain.url + '/v1', apiKey: 'unused', maxRetries: 0, timeout: 60000 });
const specClient = new OpenAI({ baseURL: spec.url + '/v1', apiKey: 'unused', maxRetries: 0, timeout: 60000 });
const user = (content) => [{ role: 'user', content }];

async function collect(stream) {
  const out = { content: '', reasoning: '', finish: null, usage: null };
  for await (const c of stream) {
    if (c.usage) out.usage = c.usage;
    for (const ch of c.choices) {
      out.content += ch.delta?.content ?? '';
      out.reasoning += ch.delta?.reasoning_content ?? '';
      if (ch.finish_reason) out.finish = ch.finish_reason;
    }
  }
  return out;
}

test('the model is listed under its name', async () => {
  const models = await client.models.list();
  assert.equal(models.data[0].id, NAME);
});

test('chat: greedy answers repeat, streaming equals non-streaming', async () => {
  const req = { model: NAME, messages: user('Hello there'), max_tokens: 12, temperature: 0 };
  const a = await client.chat.completions.create(req);
  const m = a.choices[0].message;
  assert.equal(m.role, 'assistant');
  assert.equal(typeof m.content, 'string');
  assert.ok(a.usage.completion_tokens >= 1 && a.usage.completion_tokens <= 12);
  const b = await client.chat.completions.create(req);
  assert.deepEqual(b.choices[0].message, m);
  const s = await collect(await client.chat.completions.create({ ...req, stream: true, stream_options: { include_usage: true } }));
  assert.equal(s.content, m.content ?? '');
  assert.equal(s.reasoning, m.reasoning_content ?? '');
  assert.equal(s.finish, a.choices[0].finish_reason);
  assert.equal(s.usage.completion_tokens, a.usage.completion_tokens);
});

test('chat: the template renders thinking, tools and tool history', async () => {
  const base = { model: NAME, messages: user('Hello'), max_tokens: 1, temperature: 0 };
  const off = await client.chat.completions.create(base);
  // Qwen's switch, as the client passes extra fields: thinking on drops the closed empty think block
  const on = await client.chat.completions.create({ ...base, chat_template_kwargs: { enable_thinking: true } });
  assert.ok(on.usage.prompt_tokens < off.usage.prompt_tokens, `${on.usage.prompt_tokens} < ${off.usage.prompt_tokens}`);
  const tools = [{ type: 'function', function: { name: 'get_weather', description: 'Weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];
  const withTools = await client.chat.completions.create({ ...base, tools });
  assert.ok(withTools.usage.prompt_tokens > off.usage.prompt_tokens + 20);
  const history = [
    { role: 'user', content: 'Weather in Oslo?' },
    { role: 'assistant', content: '', reasoning_content: 'I should call the tool.',
      tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: '5 C, cloudy' },
  ];
  const h = await client.chat.completions.create({ model: NAME, messages: history, tools, max_tokens: 4, temperature: 0 });
  assert.ok(h.usage.prompt_tokens > withTools.usage.prompt_tokens);
  for (const t of h.choices[0].message.tool_calls ?? []) JSON.parse(t.function.arguments);
});

test('image content is a clear 400', async () => {
  await assert.rejects(
    client.chat.completions.create({ model: NAME, max_tokens: 4, messages: [{ role: 'user', content: [
      { type: 'text', text: 'What is in this picture?' },
      { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }] }] }),
    (e) => e.status === 400 && /image_url' content is not supported/.test(e.message) && e.param === 'messages');
});

test('drafting with the MTP layer answers as plain decoding, concurrently too', async () => {
  const reqs = ['Hello there', 'Count to ten', 'Name a colour', 'Why is the sky blue?'].map((q, i) => (
    { model: NAME, messages: user(q), max_tokens: 24 + 3 * i, temperature: 0 }));
  const want = await Promise.all(reqs.map((r) => client.chat.completions.create(r)));
  const got = await Promise.all(reqs.map((r) => specClient.chat.completions.create(r)));
  for (let i = 0; i < reqs.length; ++i) {
    assert.deepEqual(got[i].choices[0].message, want[i].choices[0].message);
    assert.deepEqual(got[i].usage, want[i].usage);
  }
  const seeded = { model: NAME, messages: user('Tell me a story'), max_tokens: 20, temperature: 0.8, seed: 3 };
  const a = await client.completions.create({ model: NAME, prompt: 'Once upon a time', max_tokens: 20, temperature: 0.8, seed: 3 });
  const b = await specClient.completions.create({ model: NAME, prompt: 'Once upon a time', max_tokens: 20, temperature: 0.8, seed: 3 });
  assert.equal(b.choices[0].text, a.choices[0].text);
  const s = await collect(await specClient.chat.completions.create({ ...seeded, stream: true }));
  const n = await client.chat.completions.create(seeded);
  assert.equal(s.content, n.choices[0].message.content ?? '');
  const metrics = await (await fetch(spec.url + '/metrics')).text();
  assert.match(metrics, /strata_spec_draft_tokens_total [1-9]/);
});

test('logit_bias: drafting with the MTP layer answers as plain decoding', async () => {
  const base = { model: NAME, prompt: 'Once upon a time', max_tokens: 16, temperature: 0, logprobs: 0 };
  const plain = await client.completions.create(base);
  const first = (await (await fetch(spec.url + '/tokenize', { method: 'POST',
    body: JSON.stringify({ content: plain.choices[0].logprobs.tokens[0] }) })).json()).tokens[0];
  // the unbiased first token banned, two others lifted; greedy, seeded, and several at once
  const logit_bias = { [first]: -100, 1000: 6, 2000: 3.5 };
  const reqs = [{ ...base, logit_bias }, { ...base, logit_bias, temperature: 0.9, seed: 11 },
    { ...base, logit_bias, max_tokens: 9 }, { ...base, logit_bias, temperature: 1.1, seed: 12, top_p: 0.9 }];
  const want = await Promise.all(reqs.map((r) => client.completions.create(r)));
  const got = await Promise.all(reqs.map((r) => specClient.completions.create(r)));
  assert.notEqual(want[0].choices[0].text, plain.choices[0].text);
  for (let i = 0; i < reqs.length; ++i) {
    assert.equal(got[i].choices[0].text, want[i].choices[0].text, 'request ' + i);
    assert.ok(!want[i].choices[0].logprobs.tokens.includes(plain.choices[0].logprobs.tokens[0]), 'request ' + i);
  }
});

test('a checkpoint without mtp.* serves plainly and refuses --speculative', async () => {
  const dir = process.env.STRATA_NO_MTP_DIR;
  const s = await startServer(dir);
  try {
    const c = new OpenAI({ baseURL: s.url + '/v1', apiKey: 'unused', maxRetries: 0, timeout: 60000 });
    const req = { model: NAME, messages: user('Hello there'), max_tokens: 12, temperature: 0 };
    const [x, y] = await Promise.all([c.chat.completions.create(req), client.chat.completions.create(req)]);
    assert.deepEqual(x.choices[0].message, y.choices[0].message);
    assert.match(s.err, /no mtp\.\* tensors/);
  } finally {
    s.proc.kill('SIGTERM');
    await s.exited;
  }
  await assert.rejects(startServer(dir, ['--speculative']), /MTP/);
});
