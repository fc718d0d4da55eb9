// The web chat page (GET /) in a real headless Chromium, driven over the DevTools protocol by
// puppeteer-core (no browser download: the system's Chromium). Starts `strata serve` on a
// flash-tiny model with an API key, enters the key in the page, chats (streamed), and checks
// the reply, the reasoning block, tool calls (from a scripted stream), Stop, the live stats and
// the KV ledger chart, whose numbers must be `strata ledger`'s for the model.
//
// Environment: STRATA_BINARY, STRATA_MODEL_DIR (a flash-tiny model), CHROMIUM (the browser),
// STRATA_WEB_CHAT_OUT (a folder for the screenshot). Exit status 0 = passed.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { startStrataServe } from '../start_server.mjs';

const require = createRequire(import.meta.url);
const puppeteer = require('./node_modules/puppeteer-core');

const BIN = process.env.STRATA_BINARY;
const MODEL_DIR = process.env.STRATA_MODEL_DIR;
const CHROMIUM = process.env.CHROMIUM;
const OUT = path.resolve(process.env.STRATA_WEB_CHAT_OUT || '.');
const KEY = 'web-chat-key';
const NAME = 'flash-tiny';
const CONTEXT = 65536;
const WAIT_MS = 20000;

const server = await startStrataServe(BIN, ['--model', MODEL_DIR, '--api-key', KEY, '--model-name', NAME,
  '--max-context', String(CONTEXT), '--max-running', '2', '--log-format', 'off']);
let browser;

function step(what) {
  console.log(`web-chat: ${what}`);
}

async function metrics() {
  const r = await fetch(server.url + '/metrics', { headers: { Authorization: 'Bearer ' + KEY } });
  return r.text();
}

async function cancelledRequests() {
  const m = /strata_engine_requests_total\{outcome="cancelled"\} (\d+)/.exec(await metrics());
  return m ? Number(m[1]) : 0;
}

// The last assistant message once it is no longer streaming: {state, content, reasoning, ...}.
async function lastReply(page) {
  await page.waitForFunction(() => {
    const all = document.querySelectorAll('.msg.assistant');
    return all.length && all[all.length - 1].dataset.state !== 'streaming';
  }, { timeout: WAIT_MS });
  return page.evaluate(() => {
    const all = document.querySelectorAll('.msg.assistant');
    const m = all[all.length - 1];
    return {
      state: m.dataset.state,
      content: m.querySelector('.content').textContent,
      reasoning: m.querySelector('details div').textContent,
      reasoningShown: !m.querySelector('details').hidden,
      tools: [...m.querySelectorAll('.tool-call')].map((e) => e.textContent),
      meta: m.querySelector('.meta').textContent,
      error: m.querySelector('.error').textContent,
    };
  });
}

async function setField(page, id, value) {
  await page.$eval('#' + id, (e, v) => { e.value = v; }, value);
}

async function sendMessage(page, text) {
  await page.type('#prompt', text);
  await page.keyboard.press('Enter');
}

try {
  // The page is public, the APIs it calls are not.
  const pageRes = await fetch(server.url + '/');
  assert.equal(pageRes.status, 200);
  assert.match(pageRes.headers.get('content-type'), /^text\/html/);
  assert.match(pageRes.headers.get('content-security-policy'), /connect-src 'self'/);
  assert.equal((await fetch(server.url + '/v1/ledger')).status, 401);

  // The served ledger is `strata ledger`'s for the model at the served contexts.
  const ledger = await (await fetch(server.url + '/v1/ledger', { headers: { Authorization: 'Bearer ' + KEY } })).json();
  const cli = JSON.parse(execFileSync(BIN, ['ledger', '--model', MODEL_DIR, '--json', '--context',
    ...ledger.contexts.map(String)], { encoding: 'utf8' }));
  assert.deepEqual(ledger.bytes, cli.contexts.map((r) => r.bytes));
  assert.equal(ledger.contexts[0], 1024);
  assert.equal(ledger.contexts.at(-1), CONTEXT);
  step(`/v1/ledger matches strata ledger at ${ledger.contexts.length} contexts`);

  browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    // As root (containers, CI) Chromium's sandbox cannot start; the page is this test's own.
    args: [...(process.getuid && process.getuid() === 0 ? ['--no-sandbox'] : []), '--disable-gpu',
      '--no-first-run', '--disable-dev-shm-usage'],
  });
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 860 });
  const problems = [];
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  page.on('console', (m) => {
    // Before the key is entered the API answers 401, which Chromium logs as a failed load.
    if (m.type() === 'error' && !/status of 401/.test(m.text())) problems.push('console: ' + m.text());
  });
  const bodies = [];
  page.on('request', (r) => {
    if (!r.url().startsWith(server.url + '/') && !r.url().startsWith('data:')) problems.push('external request: ' + r.url());
    if (r.url().endsWith('/v1/chat/completions')) bodies.push(JSON.parse(r.postData()));
  });

  await page.goto(server.url + '/', { waitUntil: 'load' });
  await page.waitForFunction(() => /401/.test(document.getElementById('status').textContent), { timeout: WAIT_MS });
  step('the page loads and asks for the key');

  // The key: typed in, kept in localStorage, sent as Bearer.
  await page.type('#api-key', KEY);
  await page.keyboard.press('Tab');
  await page.waitForFunction((name) => document.getElementById('model').textContent.startsWith(name),
    { timeout: WAIT_MS }, NAME);
  assert.equal(await page.evaluate(() => localStorage.getItem('strata-web-chat.api-key')), KEY);
  step('the key is accepted; model ' + await page.$eval('#model', (e) => e.textContent));

  // Turn 1: greedy, thinking off.
  await setField(page, 'temperature', '0');
  await setField(page, 'max-tokens', '24');
  await sendMessage(page, 'Hello! What can you do?');
  const first = await lastReply(page);
  assert.equal(first.state, 'done', first.error);
  assert.ok(first.content.length > 0, 'the reply has text');
  assert.match(first.meta, /tokens/);
  assert.equal(bodies[0].stream, true);
  assert.equal(bodies[0].thinking, false);
  assert.equal(bodies[0].temperature, 0);
  assert.equal(bodies[0].max_tokens, 24);
  step(`turn 1 streamed ${JSON.stringify(first.content.slice(0, 60))} (${first.meta})`);

  // The stats and the ledger's mark for this conversation.
  await page.waitForFunction(() => Number(document.getElementById('stat-generated').textContent) > 0 &&
    /tok\/s/.test(document.getElementById('stat-tps').textContent) &&
    document.getElementById('ledger-marker'), { timeout: WAIT_MS });
  const panel = await page.evaluate(() => ({
    tps: document.getElementById('stat-tps').textContent,
    requests: document.getElementById('stat-requests').textContent,
    pool: document.getElementById('stat-pool').textContent,
    numerics: document.getElementById('stat-numerics').textContent,
    kinds: document.querySelectorAll('#ledger-svg path.kind').length,
    total: document.getElementById('ledger-total').getAttribute('d'),
    marked: Number(document.getElementById('ledger-marker').dataset.context),
    caption: document.getElementById('ledger-caption').textContent,
  }));
  assert.match(panel.requests, /^\d+ \/ \d+$/);
  assert.match(panel.pool, /of .*%/);
  assert.match(panel.numerics, /^(exact|fast)$/);
  assert.equal(panel.kinds, Object.keys(ledger.by_kind).length);
  assert.equal(panel.total.split('L').length, ledger.contexts.length);
  const usage = /context (\d+) tokens/.exec(first.meta);
  assert.equal(panel.marked, Number(usage[1]));
  assert.match(panel.caption, /This conversation: \d+ tokens = /);
  step(`stats ${panel.tps}, running/waiting ${panel.requests}, pool ${panel.pool}; ledger: ${panel.caption}`);

  // Turn 2: thinking on; the history goes with it.
  await page.click('#thinking');
  await setField(page, 'max-tokens', '16');
  await sendMessage(page, 'Think about it first.');
  const second = await lastReply(page);
  assert.equal(second.state, 'done', second.error);
  assert.equal(bodies[1].thinking, true);
  assert.deepEqual(bodies[1].messages.map((m) => m.role), ['user', 'assistant', 'user']);
  assert.equal(bodies[1].messages[1].content, first.content);
  assert.ok(second.reasoningShown && second.reasoning.length > 0, 'the reasoning is shown in its block');
  step(`turn 2 reasoned ${JSON.stringify(second.reasoning.slice(0, 60))}`);

  // Turn 3: no max_tokens (the rest of the context); Stop aborts the fetch and the server
  // cancels the request.
  const cancelledBefore = await cancelledRequests();
  await page.click('#thinking');
  await setField(page, 'max-tokens', '');
  await sendMessage(page, 'Now talk for a long time.');
  await page.waitForFunction(() => {
    const all = document.querySelectorAll('.msg.assistant');
    return all[all.length - 1].querySelector('.content').textContent.length > 0;
  }, { timeout: WAIT_MS });
  await page.click('#stop');
  const third = await lastReply(page);
  assert.equal(third.state, 'stopped');
  assert.equal(bodies[2].max_tokens, undefined);
  for (let i = 0; (await cancelledRequests()) <= cancelledBefore; i++) {
    assert.ok(i < 100, 'the server cancels the stopped request');
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(await page.$eval('#send', (e) => e.disabled), false);
  step('Stop aborted the stream and the server cancelled the request');

  const shot = path.join(OUT, 'web_chat.png');
  mkdirSync(OUT, { recursive: true });
  await page.screenshot({ path: shot, fullPage: true });
  step('screenshot: ' + shot);

  // Tool calls and reasoning from a scripted stream (random weights do not call tools): the
  // page joins the pieces of each call by index.
  await page.setRequestInterception(true);
  page.on('request', (r) => {
    if (!r.url().endsWith('/v1/chat/completions')) return r.continue();
    const chunk = (delta, finish = null) => 'data: ' + JSON.stringify({
      object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] }) + '\n\n';
    r.respond({
      status: 200, contentType: 'text/event-stream',
      body: chunk({ role: 'assistant', reasoning_content: 'The user wants ' }) + chunk({ reasoning_content: 'the weather.' }) +
        ': keep-alive\n\n' + chunk({ content: 'Checking.' }) +
        chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":' } }] }) +
        chunk({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }, 'tool_calls') +
        'data: ' + JSON.stringify({ choices: [], usage: { prompt_tokens: 40, completion_tokens: 9, total_tokens: 49 } }) + '\n\n' +
        'data: [DONE]\n\n',
    });
  });
  await sendMessage(page, 'What is the weather in Paris?');
  const tool = await lastReply(page);
  assert.equal(tool.state, 'done', tool.error);
  assert.equal(tool.reasoning, 'The user wants the weather.');
  assert.equal(tool.content, 'Checking.');
  assert.deepEqual(tool.tools, ['tool call get_weather({"city":"Paris"})']);
  assert.match(tool.meta, /finish: tool_calls/);
  step('a scripted stream shows reasoning, content and a tool call');

  assert.deepEqual(problems, []);
  step('passed');
} finally {
  if (browser) await browser.close();
  server.proc.kill('SIGTERM');
  await server.exited;
}
