// A completion's output in one comparable form, whether it came whole or streamed: per choice
// the text (chat: content and reasoning), finish_reason and logprobs, in a fixed key order, so
// that two outputs are equal exactly when their JSON strings are. Numbers round-trip through
// JSON unchanged, so equal strings mean bitwise-equal logprobs.

function emptyChoice() {
  return { text: '', reasoning: '', tool_calls: [], finish_reason: null, logprobs: null };
}

function addLogprobs(c, lp) {
  if (!lp) return;
  if (Array.isArray(lp.content)) {  // chat
    c.logprobs ??= { content: [] };
    c.logprobs.content.push(...lp.content);
  } else {  // completions
    c.logprobs ??= { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
    for (const k of ['tokens', 'token_logprobs', 'top_logprobs', 'text_offset']) c.logprobs[k].push(...(lp[k] ?? []));
  }
}

function finish(choices, usage) {
  return JSON.stringify({
    choices: choices.map((c, i) => ({ index: i, ...c })),
    completion_tokens: usage?.completion_tokens ?? null,
    prompt_tokens: usage?.prompt_tokens ?? null,
  });
}

// A whole (non-streamed) response body.
export function fromResponse(json) {
  const choices = [];
  for (const ch of json.choices) {
    const c = emptyChoice();
    if (ch.message) {
      c.text = ch.message.content ?? '';
      c.reasoning = ch.message.reasoning_content ?? '';
      c.tool_calls = ch.message.tool_calls ?? [];
    } else c.text = ch.text;
    c.finish_reason = ch.finish_reason;
    addLogprobs(c, ch.logprobs);
    choices[ch.index] = c;
  }
  return finish(choices, json.usage);
}

// The data events of a stream (with stream_options.include_usage: the last has the usage).
export function fromEvents(events) {
  const choices = [];
  let usage = null;
  for (const ev of events) {
    if (ev.usage) usage = ev.usage;
    for (const ch of ev.choices ?? []) {
      const c = (choices[ch.index] ??= emptyChoice());
      if (ch.delta) {
        c.text += ch.delta.content ?? '';
        c.reasoning += ch.delta.reasoning_content ?? '';
        if (ch.delta.tool_calls) c.tool_calls.push(...ch.delta.tool_calls);
      } else c.text += ch.text ?? '';
      if (ch.finish_reason) c.finish_reason = ch.finish_reason;
      addLogprobs(c, ch.logprobs);
    }
  }
  return finish(choices, usage);
}

// The first difference between two outputs, for the failure message.
export function firstDifference(a, b) {
  let i = 0;
  while (i < a.length && a[i] === b[i]) ++i;
  const at = (s) => JSON.stringify(s.slice(Math.max(0, i - 40), i + 60));
  return `at character ${i}: expected ${at(a)}, got ${at(b)}`;
}
