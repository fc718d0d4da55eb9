// The soak test's requests, all derived from one seed: the good request templates (each run
// alone first for its reference output, then drawn from by the concurrent clients) and the bad
// requests (each must get a 4xx with an OpenAI-style error body).

// mulberry32: a small deterministic PRNG, so that a failing mix can be replayed from its seed.
export function prng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  next.int = (lo, hi) => lo + Math.floor(next() * (hi - lo + 1));  // inclusive
  next.pick = (xs) => xs[Math.floor(next() * xs.length)];
  return next;
}

const SYLLABLES = ['ka', 'lo', 'mi', 'ter', 'son', 'ga', 'ri', 'ven', 'to', 'sha', 'pel', 'dor', 'an', 'quis', 'bel', 'ur'];

function words(r, n) {
  const out = [];
  for (let i = 0; i < n; ++i) {
    let w = '';
    for (let k = r.int(1, 3); k > 0; --k) w += r.pick(SYLLABLES);
    out.push(w);
  }
  return out.join(' ');
}

// Ordinary ids, clear of the special tokens at both ends of the vocabulary.
function ids(r, n) {
  return Array.from({ length: n }, () => r.int(1000, 100000));
}

// Greedy or seeded sampling, sometimes with the sampler's other knobs (their state must also
// survive preemption and batching).
function sampling(r, i) {
  const s = {};
  if (i % 2 === 0) s.temperature = 0;
  else {
    s.temperature = r.pick([0.6, 0.9, 1.2]);
    s.seed = r.int(1, 1 << 30);
    if (r() < 0.4) s.top_p = 0.9;
    if (r() < 0.3) s.top_k = 40;
    if (r() < 0.3) s.frequency_penalty = 0.5;
  }
  return s;
}

// context: the served context. Long prompts take about half of it; two long prefixes (3 and 2
// cache blocks of 128 tokens at 1024) and a long system prompt are shared by several templates
// each. Most templates are short, so that a two-minute run still has a few hundred requests.
export function makeTemplates(seed, context, count = 48) {
  const r = prng(seed);
  const prefixA = ids(r, Math.floor((3 * context) / 8));
  const prefixB = ids(r, Math.floor(context / 4));
  const system = words(r, Math.floor(context / 6));  // ~2 tokens a word: a third of the context
  const out = [];
  for (let i = 0; i < count; ++i) {
    const kind = ['short', 'short', 'long', 'prefix', 'short', 'short', 'prefix', 'short'][i % 8];
    const chat = Math.floor(i / 8) % 2 === 1;
    const body = { ...sampling(r, i), max_tokens: kind === 'short' ? r.int(4, 40) : r.int(8, 32) };
    if (r() < 0.3) {
      if (chat) Object.assign(body, { logprobs: true, top_logprobs: 2 });
      else body.logprobs = 2;
    }
    if (i % 11 === 5) body.n = 2;  // choice j samples with seed + j
    if (i % 13 === 7) body.stop = ['ka', '\n'];
    if (chat) {
      const q = words(r, kind === 'short' ? r.int(3, 30) : r.int(10, 30));
      if (kind === 'short') body.messages = [{ role: 'user', content: q }];
      else if (kind === 'long') body.messages = [{ role: 'user', content: words(r, Math.floor(context / 4)) }];
      else body.messages = [{ role: 'system', content: system }, { role: 'user', content: q }];
    } else if (kind === 'short') {
      body.prompt = r() < 0.5 ? words(r, r.int(2, 40)) : ids(r, r.int(2, 60));
    } else if (kind === 'long') {
      body.prompt = ids(r, r.int(Math.floor(context * 0.45), Math.floor(context * 0.6)));
    } else {
      body.prompt = [...(r() < 0.5 ? prefixA : prefixB), ...ids(r, r.int(4, 80))];
    }
    out.push({ id: i, kind, endpoint: chat ? '/v1/chat/completions' : '/v1/completions', body });
  }
  return out;
}

// Bad requests: [name, endpoint, raw body]. Every one must be answered 4xx with
// {"error": {"message", "type", "param", "code"}}; none may reach the engine.
export function badRequests(context, vocab) {
  const C = '/v1/completions', CH = '/v1/chat/completions';
  const user = [{ role: 'user', content: 'hello' }];
  const j = (o) => JSON.stringify(o);
  const longIds = (n) => Array.from({ length: n }, (_, i) => 1000 + (i % 5000));
  return [
    ['malformed JSON', C, '{"prompt": "abc", "max_tokens": '],
    ['not JSON at all', CH, 'hello there'],
    ['empty body', C, ''],
    ['body is an array', CH, '[1, 2, 3]'],
    ['invalid UTF-8', C, Buffer.from([0x7b, 0x22, 0x70, 0x72, 0x6f, 0x6d, 0x70, 0x74, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d])],
    ['prompt is a number', C, j({ prompt: 5 })],
    ['max_tokens is a string', C, j({ prompt: 'x', max_tokens: 'ten' })],
    ['max_tokens negative', C, j({ prompt: 'x', max_tokens: -3 })],
    ['max_tokens huge', C, j({ prompt: 'x', max_tokens: 1e30 })],
    ['temperature is a string', CH, j({ messages: user, temperature: 'hot' })],
    ['messages is a string', CH, j({ messages: 'hi' })],
    ['messages missing', CH, j({ max_tokens: 4 })],
    ['messages empty', CH, j({ messages: [] })],
    ['unknown role', CH, j({ messages: [{ role: 'wizard', content: 'x' }] })],
    ['stream is a string', CH, j({ messages: user, stream: 'yes' })],
    ['n is 0', C, j({ prompt: 'x', n: 0 })],
    ['token id past the vocabulary', C, j({ prompt: [1, 2, vocab + 1000] })],
    ['negative token id', C, j({ prompt: [5, -1] })],
    ['logit_bias id past the vocabulary', CH, j({ messages: user, logit_bias: { [String(vocab + 5)]: 1 } })],
    ['prompt longer than the context', C, j({ prompt: longIds(context + 50), max_tokens: 4 })],
    ['prompt + max_tokens over the context', C, j({ prompt: longIds(context - 20), max_tokens: 100 })],
    ['max_tokens over the context (chat)', CH, j({ messages: user, max_tokens: context * 4 })],
    ['unsupported field: suffix', C, j({ prompt: 'x', suffix: 'y' })],
    ['unsupported field: functions', CH, j({ messages: user, functions: [] })],
    ['unsupported field: best_of above n', C, j({ prompt: 'x', best_of: 3 })],
    ['unsupported field: audio', CH, j({ messages: user, audio: { voice: 'x' } })],
    ['unknown model', C, j({ prompt: 'x', model: 'no-such-model' })],
  ];
}
