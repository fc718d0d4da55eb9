// `strata serve --journal` killed with SIGKILL at random points and restarted on the same
// journal (node --test; run by crash_resume_test.cpp). Environment: STRATA_BINARY,
// STRATA_MODEL_DIR (flash-tiny).
// - Streaming and non-streaming requests, chat, completions and responses, greedy and seeded
//   (n = 2, a JSON mode, logprobs) are sent with an Idempotency-Key and sent again after every restart
//   (a stream with the Last-Event-ID it had). Each client's joined answer is byte for byte the
//   answer of a run that was never interrupted: nothing lost, nothing twice.
// - Some restarts find a torn or corrupt journal tail: it is truncated and reported, and
//   serving goes on. No run reports a sanitizer error; the last exits cleanly on SIGTERM.
// - DELETE /v1/requests/{id} cancels a running stream, which ends with finish_reason
//   "cancelled", and the next start does not compute it again but answers it as before.
// - POST /v1/responses/{id}/cancel does the same for a response, whose stream ends with
//   response.cancelled carrying the response object at status "cancelled".
// - A SIGTERM that cancels a running journaled request (--shutdown-timeout 0) leaves its
//   snapshot; the next start continues it from there, and its answer equals an uninterrupted one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, appendFileSync, readFileSync, truncateSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startStrataServe } from './start_server.mjs';

const BIN = process.env.STRATA_BINARY;
const MODEL_DIR = process.env.STRATA_MODEL_DIR;
// At least 9, so every damage kind below comes round; the sanitized build runs fewer (a round
// there costs what several do in release, and the release run keeps the full count).
const KILLS = Math.max(9, Number(process.env.CRASH_KILLS ?? 24));
const ARGS = ['--model', MODEL_DIR, '--model-name', 'tiny', '--max-context', '4096', '--log-format', 'off',
  '--journal-sync-ms', '50'];

// A crash tears only what was written after the last fsync: a tokens or end record is cut by
// 3 bytes. A begin record was fsynced before its request's first event was sent, so a torn
// copy of it is appended instead; cutting it would lose a request whose client has events.
function tearLastRecord(file) {
  const bytes = readFileSync(file);
  let start = -1;
  for (let p = 8; p + 8 <= bytes.length; p += 8 + bytes.readUInt32LE(p)) start = p;
  if (start < 0) return truncateSync(file, Math.max(8, bytes.length - 3));
  const record = bytes.subarray(start);
  if (!record.includes(Buffer.from('streams'))) return truncateSync(file, bytes.length - 3);
  appendFileSync(file, record.subarray(0, record.length - 3));
}

// A small deterministic generator: the kill points and tails differ by seed, never by chance.
let rng = Number(process.env.CRASH_SEED ?? 20261207) >>> 0;
function random() {
  rng = (rng + 0x6D2B79F5) >>> 0;
  let t = rng;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

const chat = (content) => [{ role: 'user', content }];
const REQUESTS = [
  ['/v1/completions', { prompt: 'Once upon a time', max_tokens: 260, temperature: 0, ignore_eos: true, stream: true }],
  ['/v1/completions', { prompt: 'The journal of a server', max_tokens: 220, temperature: 0.9, seed: 5, ignore_eos: true }],
  ['/v1/chat/completions', { messages: chat('Tell me a story.'), max_tokens: 240, temperature: 0, ignore_eos: true,
    stream: true, stream_options: { include_usage: true } }],
  ['/v1/chat/completions', { messages: chat('And another one.'), max_tokens: 200, temperature: 1.0, top_p: 0.9, seed: 11,
    presence_penalty: 0.5, ignore_eos: true }],
  ['/v1/completions', { prompt: 'Two ways', max_tokens: 150, temperature: 0.8, seed: 3, n: 2, ignore_eos: true, stream: true }],
  ['/v1/completions', { prompt: 'With logprobs', max_tokens: 120, temperature: 0, logprobs: 2, ignore_eos: true }],
  ['/v1/chat/completions', { messages: chat('Answer in JSON.'), max_tokens: 200, temperature: 1.0, seed: 9,
    response_format: { type: 'json_object' }, stream: true }],
  ['/v1/completions', { prompt: 'A late arrival', max_tokens: 200, temperature: 0.7, seed: 21, ignore_eos: true, stream: true }],
  ['/v1/chat/completions', { messages: chat('The last one.'), max_tokens: 180, temperature: 0, ignore_eos: true }],
  ['/v1/completions', { prompt: 'Streamed logprobs', max_tokens: 100, temperature: 0.5, seed: 2, logprobs: 1, ignore_eos: true,
    stream: true }],
  ['/v1/responses', { input: 'Write a long answer.', max_output_tokens: 240, temperature: 0, stream: true }],
  ['/v1/responses', { instructions: 'Be brief.', input: 'A seeded one.', max_output_tokens: 200, temperature: 0.9, seed: 13 }],
].map(([path, body], i) => ({ path, body: JSON.stringify({ model: 'tiny', ...body }), stream: !!body.stream, key: 'crash-' + i,
  round: Math.floor((i * KILLS) / 12) }));  // when it is first sent: some arrive late

// A sanitized build's reports (the test also runs against one).
const SANITIZER = /Sanitizer|runtime error:/;

// The answer without what differs between two runs by design: the response id and time (a
// response's item ids carry its id's own part).
function normalize(text) {
  for (const own of new Set([...text.matchAll(/"id":"resp_([A-Za-z0-9]+)"/g)].map((m) => m[1])))
    text = text.replaceAll(own, 'ID');
  return text.replace(/"id":"(chatcmpl|cmpl)-[A-Za-z0-9]+"/g, '"id":"ID"').replace(/"created(_at)?":\d+/g, '"created$1":0');
}

// The last event of a stream: [DONE], or a response's terminal event.
const LAST_EVENT = /^data: \[DONE\]$|^event: response\.(completed|incomplete|failed|cancelled)$/m;

// What must be equal: the whole answer; for a stream of several choices, each choice's events
// in order (choices interleave by timing, in any run).
function comparable(client) {
  const text = normalize(client.received);
  if (!client.req.stream || !JSON.parse(client.req.body).n) return text;
  const byChoice = {};
  for (const block of text.split('\n\n').filter((b) => b)) {
    const data = block.slice(block.indexOf('data: ') + 6);
    const choice = data.startsWith('{') ? JSON.parse(data).choices[0]?.index ?? 'usage' : 'done';
    const raw = /^id: (.*)$/m.exec(block)[1];
    const id = typeof choice === 'number' ? raw.split('.')[choice] : raw;
    (byChoice[choice] ??= []).push(id + ' ' + data);
  }
  return JSON.stringify(byChoice);
}

// One client: sends its request (again) and keeps what it has received in whole events.
class Client {
  constructor(req) {
    this.req = req;
    this.received = '';  // SSE events, each "id: ...\n[event: ...\n]data: ...\n\n"
    this.lastId = '';
    this.done = false;
    this.attempts = 0;
  }
  async attempt(url) {
    ++this.attempts;
    const headers = { 'Content-Type': 'application/json', 'Idempotency-Key': this.req.key };
    if (this.lastId) headers['Last-Event-ID'] = this.lastId;
    let r;
    try {
      r = await fetch(url + this.req.path, { method: 'POST', headers, body: this.req.body });
      if (r.status !== 200) throw new Error('HTTP ' + r.status + ': ' + (await r.text()));
      if (!this.req.stream) {
        this.received = await r.text();
        this.done = true;
        return;
      }
      const reader = r.body.getReader();
      const dec = new TextDecoder();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        let end;
        while ((end = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, end + 2);
          buf = buf.slice(end + 2);
          if (block.startsWith(':')) continue;  // keep-alive
          const id = /^id: (.*)$/m.exec(block);
          assert.ok(id, 'every event has an id: ' + block);
          this.lastId = id[1];
          this.received += block;
          if (LAST_EVENT.test(block)) this.done = true;
        }
      }
    } catch (e) {
      if (e.code === 'ERR_ASSERTION' || /^HTTP (4|5)\d\d/.test(e.message) && !/ECONNRESET|socket/.test(e.message)) throw e;
      // The server was killed under it: sent again after the restart.
    }
  }
}

async function runAll(url, clients) {
  await Promise.all(clients.map((c) => c.attempt(url)));
}

test('SIGKILL at random points: every answer equals the uninterrupted one', { timeout: 240000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'strata_crash_'));
  let server = null;  // the one running, killed if the test fails
  try {
    // The uninterrupted answers.
    const base = server = await startStrataServe(BIN, [...ARGS, '--journal', join(dir, 'baseline')]);
    const expected = REQUESTS.map((r) => new Client(r));
    await runAll(base.url, expected);
    base.proc.kill('SIGTERM');
    await base.exited;
    for (const c of expected) assert.ok(c.done, c.req.key);

    const journal = join(dir, 'journal');
    const file = join(journal, 'requests.journal');
    const clients = REQUESTS.map((r) => new Client(r));
    let truncations = 0;
    let damaged = false;  // the journal's tail was damaged (torn or garbage) before this run
    const checkTruncated = (err) => {
      if (damaged) assert.match(err, /journal .*: truncated \d+ bytes after byte \d+ \(.+\)/);
      damaged = false;
      truncations += (err.match(/truncated \d+ bytes/g) ?? []).length;
    };
    for (let round = 0; round <= KILLS; ++round) {
      server = await startStrataServe(BIN, [...ARGS, '--journal', journal]);
      const running = Promise.all(clients.filter((c) => !c.done && c.req.round <= round).map((c) => c.attempt(server.url)));
      if (round === KILLS) {  // the last run goes to the end
        await running;
        server.proc.kill('SIGTERM');
        const { code, err } = await server.exited;
        assert.equal(code, 0, err);
        assert.doesNotMatch(err, SANITIZER);
        checkTruncated(err);
        break;
      }
      await new Promise((res) => setTimeout(res, 80 + random() * 500));
      server.proc.kill('SIGKILL');
      const { signal, err } = await server.exited;
      assert.equal(signal, 'SIGKILL', err);
      assert.doesNotMatch(err, SANITIZER);
      checkTruncated(err);
      await running;
      // Every third restart finds a damaged tail: torn, garbage, or its last record cut.
      if (round % 3 === 2) {
        const kind = Math.floor(round / 3) % 3;
        if (kind === 0) appendFileSync(file, Buffer.from([200, 0, 0, 0, 1, 2, 3, 4, 5, 6]));
        else if (kind === 1) appendFileSync(file, Buffer.from(Array.from({ length: 64 }, () => Math.floor(random() * 256))));
        else tearLastRecord(file);
        damaged = kind !== 2 || statSync(file).size > 8;
      }
    }
    for (const c of clients) assert.ok(c.done, c.req.key + ' did not finish after ' + c.attempts + ' attempts');
    const differ = clients.filter((c, i) => comparable(c) !== comparable(expected[i]));
    assert.deepEqual(differ.map((c) => c.req.key), [], differ.map((c) => c.req.key + ':\n' + c.received).join('\n'));
    assert.ok(clients.some((c) => c.attempts > 2), 'requests were interrupted');
    const damagedRounds = Math.floor((KILLS + 1) / 3);  // rounds 2, 5, 8, ... before the last
    assert.ok(truncations >= Math.min(5, damagedRounds), 'damaged tails were found: ' + truncations);
  } finally {
    if (server && server.proc.exitCode === null && server.proc.signalCode === null) server.proc.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});

// A restart on the journal that answers GET `path` without computing anything again, then
// ends cleanly: the answer's JSON.
async function answeredAfterRestart(journal, path) {
  const server = await startStrataServe(BIN, [...ARGS, '--journal', journal]);
  try {
    const r = await fetch(server.url + path);
    assert.equal(r.status, 200);
    const json = await r.json();
    const metrics = await (await fetch(server.url + '/metrics')).text();
    assert.match(metrics, /strata_generation_tokens_total 0\n/);
    server.proc.kill('SIGTERM');
    const { code, err } = await server.exited;
    assert.equal(code, 0, err);
    assert.doesNotMatch(err, SANITIZER);
    return json;
  } finally {
    if (server.proc.exitCode === null && server.proc.signalCode === null) server.proc.kill('SIGKILL');
  }
}

test('DELETE cancels a running request and a restart answers it without computing it again', { timeout: 120000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'strata_cancel_'));
  const journal = join(dir, 'journal');
  let server = null;
  try {
    server = await startStrataServe(BIN, [...ARGS, '--journal', journal]);
    const body = JSON.stringify({ model: 'tiny', prompt: 'Cancel me', max_tokens: 4000, temperature: 0, ignore_eos: true,
      stream: true });
    const r = await fetch(server.url + '/v1/completions', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
    assert.equal(r.status, 200);
    const id = r.headers.get('x-request-id');
    const reader = r.body.getReader();
    const dec = new TextDecoder();
    let text = dec.decode((await reader.read()).value, { stream: true });
    const del = await fetch(server.url + '/v1/requests/' + id, { method: 'DELETE' });
    assert.equal(del.status, 200);
    assert.deepEqual(await del.json(), { id, object: 'request', status: 'cancelled' });
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += dec.decode(value, { stream: true });
    }
    assert.match(text, /"finish_reason":"cancelled"/);
    assert.match(text, /data: \[DONE\]\n\n$/);
    const whole = await (await fetch(server.url + '/v1/requests/' + id)).json();
    assert.equal(whole.choices[0].finish_reason, 'cancelled');
    assert.ok(whole.usage.completion_tokens < 4000, JSON.stringify(whole.usage));
    server.proc.kill('SIGTERM');
    assert.equal((await server.exited).code, 0);

    server = null;
    const again = await answeredAfterRestart(journal, '/v1/requests/' + id);
    assert.deepEqual(again.choices, whole.choices);
    assert.equal(again.usage.completion_tokens, whole.usage.completion_tokens);
  } finally {
    if (server && server.proc.exitCode === null && server.proc.signalCode === null) server.proc.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});

test('POST /v1/responses/{id}/cancel ends a response as cancelled and a restart answers it as before', { timeout: 120000 },
  async () => {
    const dir = mkdtempSync(join(tmpdir(), 'strata_cancel_resp_'));
    const journal = join(dir, 'journal');
    let server = null;
    try {
      server = await startStrataServe(BIN, [...ARGS, '--journal', journal]);
      const body = JSON.stringify({ model: 'tiny', input: 'Cancel me', max_output_tokens: 4000, temperature: 0,
        stream: true });
      const r = await fetch(server.url + '/v1/responses', { method: 'POST', headers: { 'Content-Type': 'application/json' },
        body });
      assert.equal(r.status, 200);
      const id = r.headers.get('x-request-id');
      assert.match(id, /^resp_/);
      const reader = r.body.getReader();
      const dec = new TextDecoder();
      let text = dec.decode((await reader.read()).value, { stream: true });
      const cancel = await fetch(server.url + '/v1/responses/' + id + '/cancel', { method: 'POST' });
      assert.equal(cancel.status, 200);
      const cancelled = await cancel.text();
      const object = JSON.parse(cancelled);
      assert.equal(object.id, id);
      assert.equal(object.status, 'cancelled');
      assert.ok(object.usage.output_tokens < 4000, JSON.stringify(object.usage));
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        text += dec.decode(value, { stream: true });
      }
      const last = text.trimEnd().split('\n\n').pop();
      assert.match(last, /^id: \d+\nevent: response\.cancelled\ndata: /);
      assert.equal(last.slice(last.indexOf('data: ') + 6),
        '{"type":"response.cancelled","response":' + cancelled + ',"sequence_number":' + /^id: (\d+)/.exec(last)[1] + '}');
      assert.equal(await (await fetch(server.url + '/v1/responses/' + id)).text(), cancelled);
      server.proc.kill('SIGTERM');
      assert.equal((await server.exited).code, 0);

      server = null;
      const again = await answeredAfterRestart(journal, '/v1/responses/' + id);
      assert.equal(again.status, 'cancelled');
      assert.deepEqual(again.output, object.output);
      assert.equal(again.usage.output_tokens, object.usage.output_tokens);
    } finally {
      if (server && server.proc.exitCode === null && server.proc.signalCode === null) server.proc.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });

test('a shutdown that cancels a journaled request leaves its snapshot: the restart continues from it', { timeout: 120000 },
  async () => {
    const dir = mkdtempSync(join(tmpdir(), 'strata_snapshot_'));
    const journal = join(dir, 'journal');
    let server = null;
    try {
      const request = { model: 'tiny', prompt: 'Continue me', max_tokens: 300, temperature: 0.9, seed: 7, ignore_eos: true };
      server = await startStrataServe(BIN, [...ARGS]);
      const expected = await (await fetch(server.url + '/v1/completions', { method: 'POST',
        headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(request) })).json();
      server.proc.kill('SIGTERM');
      assert.equal((await server.exited).code, 0);

      server = await startStrataServe(BIN, [...ARGS, '--journal', journal, '--shutdown-timeout', '0']);
      const r = await fetch(server.url + '/v1/completions', { method: 'POST',
        headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ ...request, stream: true }) });
      assert.equal(r.status, 200);
      const id = r.headers.get('x-request-id');
      const reader = r.body.getReader();
      await reader.read();  // under way
      server.proc.kill('SIGTERM');
      for (;;) if ((await reader.read()).done) break;
      const stopped = await server.exited;
      assert.equal(stopped.code, 0, stopped.err);
      assert.match(stopped.err, /cancelling 1 requests/);
      assert.doesNotMatch(stopped.err, /no snapshot/);

      server = await startStrataServe(BIN, [...ARGS, '--journal', journal]);
      const whole = await (await fetch(server.url + '/v1/requests/' + id)).json();
      server.proc.kill('SIGTERM');
      const { code, err } = await server.exited;
      assert.equal(code, 0, err);
      assert.match(err, /1 requests resumed \(1 choices from snapshots\)/);
      assert.doesNotMatch(err, SANITIZER);
      assert.equal(whole.choices[0].text, expected.choices[0].text);
      assert.equal(whole.choices[0].finish_reason, expected.choices[0].finish_reason);
      assert.deepEqual(whole.usage, expected.usage);
    } finally {
      if (server && server.proc.exitCode === null && server.proc.signalCode === null) server.proc.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });
