#include "server/web_chat_page.h"

namespace strata::server {

std::vector<std::pair<std::string, std::string>> web_chat_headers() {
  // 'unsafe-inline' is what lets a single-file page run its own script and style; it is safe
  // here because the page puts every text that comes from the model or the server into the DOM
  // as text (textContent), never as markup, and connect-src 'self' keeps it from sending
  // anything (the API key included) anywhere but this server.
  return {{"Content-Security-Policy",
           "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; "
           "img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"},
          {"X-Content-Type-Options", "nosniff"},
          {"X-Frame-Options", "DENY"},
          {"Referrer-Policy", "no-referrer"},
          {"Cache-Control", "no-cache"}};
}

// The page's source, kept as plain HTML so it reads (and diffs) as what it is.
std::string_view web_chat_page() {
  static constexpr std::string_view page = R"strata_page(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>strata chat</title>
<link rel="icon" href="data:,">
<style>
  :root {
    --bg: #f6f7f9; --panel: #ffffff; --text: #1c2330; --muted: #667085; --line: #d9dee7;
    --accent: #2f6fde; --user: #e8f0fe; --error: #b42318; --code: #f1f3f6;
    font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  }
  @media (prefers-color-scheme: dark) {
    :root { --bg: #14171c; --panel: #1c2028; --text: #e3e7ee; --muted: #98a2b3; --line: #333a46;
            --accent: #6ea0ff; --user: #22304a; --error: #ff8a80; --code: #252a33; }
  }
  * { box-sizing: border-box; }
  body { margin: 0; background: var(--bg); color: var(--text); height: 100vh; display: flex; flex-direction: column; }
  header { display: flex; align-items: center; gap: 12px; padding: 8px 16px; border-bottom: 1px solid var(--line); background: var(--panel); }
  header h1 { font-size: 17px; margin: 0; }
  .pill { padding: 2px 10px; border-radius: 999px; background: var(--code); color: var(--muted); font-size: 13px; }
  #status { margin-left: auto; font-size: 13px; color: var(--muted); }
  #status.error { color: var(--error); }
  main { flex: 1; display: flex; min-height: 0; }
  #chat { flex: 1; display: flex; flex-direction: column; min-width: 0; }
  #messages { flex: 1; overflow-y: auto; padding: 16px; display: flex; flex-direction: column; gap: 12px; }
  #messages:empty::before { content: "Ask the model something."; color: var(--muted); margin: auto; }
  .msg { max-width: 52rem; padding: 10px 14px; border-radius: 10px; background: var(--panel); border: 1px solid var(--line); }
  .msg.user { align-self: flex-end; background: var(--user); }
  .msg.user.unsent { opacity: 0.6; }
  .msg .content { white-space: pre-wrap; overflow-wrap: anywhere; }
  .msg[data-state="streaming"] .content::after { content: "▍"; color: var(--accent); }
  .msg details { margin-bottom: 6px; color: var(--muted); }
  .msg details summary { cursor: pointer; font-size: 13px; }
  .msg details div { white-space: pre-wrap; font-size: 13px; border-left: 3px solid var(--line); padding-left: 8px; margin-top: 4px; }
  .tool-call { font: 13px/1.4 ui-monospace, monospace; background: var(--code); border-radius: 6px; padding: 6px 8px; margin-top: 6px; white-space: pre-wrap; overflow-wrap: anywhere; }
  .tool-call b { color: var(--accent); }
  .msg .meta { font-size: 12px; color: var(--muted); margin-top: 6px; }
  .msg .error { color: var(--error); font-size: 13px; margin-top: 6px; }
  #composer { display: flex; gap: 8px; padding: 12px 16px; border-top: 1px solid var(--line); background: var(--panel); }
  #prompt { flex: 1; resize: vertical; min-height: 2.6em; font: inherit; padding: 8px; border-radius: 8px; border: 1px solid var(--line); background: var(--bg); color: var(--text); }
  .buttons { display: flex; flex-direction: column; gap: 6px; }
  button { font: inherit; padding: 6px 14px; border-radius: 8px; border: 1px solid var(--line); background: var(--bg); color: var(--text); cursor: pointer; }
  button#send { background: var(--accent); border-color: var(--accent); color: #fff; }
  button:disabled { opacity: 0.45; cursor: default; }
  aside { width: 360px; flex: none; overflow-y: auto; border-left: 1px solid var(--line); background: var(--panel); padding: 4px 14px 14px; }
  aside h2 { font-size: 14px; margin: 14px 0 6px; text-transform: uppercase; letter-spacing: 0.04em; color: var(--muted); }
  aside label { display: flex; align-items: center; justify-content: space-between; gap: 8px; margin: 6px 0; font-size: 14px; }
  aside input[type="number"], aside input[type="password"] { width: 12em; font: inherit; padding: 3px 6px; border-radius: 6px; border: 1px solid var(--line); background: var(--bg); color: var(--text); }
  dl { display: grid; grid-template-columns: auto 1fr; gap: 3px 12px; margin: 0; font-size: 14px; }
  dt { color: var(--muted); }
  dd { margin: 0; text-align: right; font-variant-numeric: tabular-nums; }
  #pool-kinds { font-size: 12px; color: var(--muted); margin-top: 4px; }
  #ledger-svg { width: 100%; height: auto; display: block; }
  #ledger-svg text { font: 10px system-ui, sans-serif; fill: var(--muted); }
  #ledger-svg .grid { stroke: var(--line); stroke-width: 1; }
  #ledger-svg .total { stroke: var(--text); stroke-width: 2.2; fill: none; }
  #ledger-svg .kind { stroke-width: 1.3; fill: none; }
  #ledger-svg .mark { stroke: var(--accent); stroke-width: 1.5; stroke-dasharray: 4 3; }
  #ledger-svg .mark-dot { fill: var(--accent); }
  #ledger-svg text.mark-label { fill: var(--accent); }
  #ledger-legend { font-size: 12px; color: var(--muted); display: flex; flex-wrap: wrap; gap: 2px 12px; margin: 4px 0; }
  #ledger-legend span::before { content: ""; display: inline-block; width: 12px; height: 3px; margin-right: 4px; vertical-align: middle; background: var(--swatch); }
  #ledger-caption { font-size: 13px; margin: 6px 0 0; }
  @media (max-width: 820px) { main { flex-direction: column; } aside { width: auto; border-left: 0; border-top: 1px solid var(--line); } }
</style>
</head>
<body>
<header>
  <h1>strata</h1>
  <span id="model" class="pill" title="the served model">…</span>
  <span id="status" role="status"></span>
</header>
<main>
  <section id="chat">
    <div id="messages" aria-live="polite"></div>
    <form id="composer">
      <textarea id="prompt" rows="3" placeholder="Message (Enter sends, Shift+Enter adds a line)"></textarea>
      <div class="buttons">
        <button id="send" type="submit">Send</button>
        <button id="stop" type="button" disabled>Stop</button>
        <button id="clear" type="button">New chat</button>
      </div>
    </form>
  </section>
  <aside>
    <h2>Settings</h2>
    <label>API key <input id="api-key" type="password" autocomplete="off" placeholder="none"></label>
    <label>Thinking <input id="thinking" type="checkbox"></label>
    <label>Temperature <input id="temperature" type="number" min="0" max="2" step="0.1" value="0.7"></label>
    <label>Max tokens <input id="max-tokens" type="number" min="1" step="1" value="512" placeholder="rest of context"></label>

    <h2>Server</h2>
    <dl id="stats">
      <dt>Generation</dt><dd id="stat-tps">–</dd>
      <dt>Running / waiting</dt><dd id="stat-requests">–</dd>
      <dt>KV pool in use</dt><dd id="stat-pool">–</dd>
      <dt>Tokens generated</dt><dd id="stat-generated">–</dd>
      <dt>Prompt tokens</dt><dd id="stat-prompt">–</dd>
      <dt>Prefix cache hits</dt><dd id="stat-prefix">–</dd>
      <dt>Mean time to first token</dt><dd id="stat-ttft">–</dd>
      <dt>Numerics</dt><dd id="stat-numerics">–</dd>
    </dl>
    <div id="pool-kinds"></div>

    <h2>KV ledger</h2>
    <svg id="ledger-svg" viewBox="0 0 340 200" role="img" aria-label="Cache memory per request against context length"></svg>
    <div id="ledger-legend"></div>
    <p id="ledger-caption">–</p>
  </aside>
</main>
<script>
'use strict';

const $ = (id) => document.getElementById(id);
const KEY_STORE = 'strata-web-chat.api-key';
const STATS_EVERY_MS = 2000;
const SVG_NS = 'http://www.w3.org/2000/svg';
const KIND_COLORS = ['#e07a1f', '#2f9e6e', '#8a5cd6', '#d6456b', '#1f8fc7', '#a1891a', '#6b7a8f'];

const state = {
  history: [],       // the conversation as sent to the API: {role, content[, tool_calls]}
  controller: null,  // the running request's AbortController
  model: null,
  context: 0,        // tokens of the last finished exchange (prompt + reply)
  ledger: null,      // the last /v1/ledger answer
  lastGenerated: null,  // {tokens, time} of the previous /metrics poll, for tokens/s
};

// ---- HTTP ----

function authHeaders(json) {
  const h = {};
  const key = $('api-key').value.trim();
  if (key) h['Authorization'] = 'Bearer ' + key;
  if (json) h['Content-Type'] = 'application/json';
  return h;
}

async function errorText(res) {
  let msg = 'HTTP ' + res.status;
  try {
    const j = await res.json();
    if (j.error && j.error.message) msg += ': ' + j.error.message;
  } catch (e) { /* not JSON: the status says enough */ }
  if (res.status === 401) msg += ' (enter the server\'s API key under Settings)';
  return msg;
}

async function getJson(path) {
  const res = await fetch(path, { headers: authHeaders(false), cache: 'no-store' });
  if (!res.ok) throw new Error(await errorText(res));
  return res.json();
}

function setStatus(text, isError) {
  $('status').textContent = text;
  $('status').classList.toggle('error', !!isError);
}

// ---- formatting ----

function humanBytes(b) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (Math.abs(b) >= 1024 && i < units.length - 1) { b /= 1024; i++; }
  if (i === 0) return b.toFixed(0) + ' B';
  // 10 MiB, 1.5 MiB: no trailing zeros.
  return String(Number(b.toFixed(b >= 100 ? 0 : b >= 10 ? 1 : 2))) + ' ' + units[i];
}

function humanTokens(n) {
  if (n >= 1048576 && n % 1048576 === 0) return (n / 1048576) + 'M';
  if (n >= 1024 && n % 1024 === 0) return (n / 1024) + 'K';
  return String(n);
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function svgEl(tag, attrs, text) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

// ---- the model ----

async function loadModel() {
  const j = await getJson('/v1/models');
  const m = j.data && j.data[0];
  if (!m) throw new Error('/v1/models lists no model');
  state.model = m.id;
  $('model').textContent = m.id + (m.max_model_len ? ' · ' + humanTokens(m.max_model_len) + ' context' : '');
}

// ---- live stats from /metrics (Prometheus text) ----

function parseMetrics(text) {
  const samples = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([A-Za-z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels = {};
    for (const l of (m[2] || '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1]] = l[2].replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
    samples.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return samples;
}

function metricValue(samples, name, labels) {
  const s = samples.find((x) => x.name === name &&
    Object.entries(labels || {}).every(([k, v]) => x.labels[k] === v));
  return s ? s.value : undefined;
}

async function refreshStats() {
  let text;
  try {
    const res = await fetch('/metrics', { headers: authHeaders(false), cache: 'no-store' });
    if (!res.ok) throw new Error(await errorText(res));
    text = await res.text();
  } catch (e) {
    $('stat-tps').textContent = '–';
    setStatus('metrics: ' + e.message, true);
    return;
  }
  const s = parseMetrics(text);
  const now = performance.now();
  const generated = metricValue(s, 'strata_generation_tokens_total') || 0;
  if (state.lastGenerated) {
    const dt = (now - state.lastGenerated.time) / 1000;
    const rate = dt > 0 ? (generated - state.lastGenerated.tokens) / dt : 0;
    $('stat-tps').textContent = rate.toFixed(1) + ' tok/s';
  }
  state.lastGenerated = { tokens: generated, time: now };
  $('stat-requests').textContent =
    (metricValue(s, 'strata_requests_running') || 0) + ' / ' + (metricValue(s, 'strata_requests_waiting') || 0);
  const total = metricValue(s, 'strata_pool_bytes_total') || 0;
  const used = s.filter((x) => x.name === 'strata_pool_bytes_used');
  const usedBytes = used.reduce((a, x) => a + x.value, 0);
  $('stat-pool').textContent = humanBytes(usedBytes) + ' of ' + humanBytes(total) +
    ' (' + ((metricValue(s, 'strata_pool_usage_ratio') || 0) * 100).toFixed(1) + '%)';
  $('pool-kinds').textContent = used.filter((x) => x.value > 0)
    .map((x) => x.labels.kind + ' ' + humanBytes(x.value)).join(' · ');
  $('stat-generated').textContent = String(generated);
  $('stat-prompt').textContent = String(metricValue(s, 'strata_prompt_tokens_total') || 0);
  $('stat-prefix').textContent = ((metricValue(s, 'strata_prefix_cache_hit_rate') || 0) * 100).toFixed(1) + '%';
  const ttftCount = metricValue(s, 'strata_time_to_first_token_seconds_count') || 0;
  const ttftSum = metricValue(s, 'strata_time_to_first_token_seconds_sum') || 0;
  $('stat-ttft').textContent = ttftCount > 0 ? (1000 * ttftSum / ttftCount).toFixed(0) + ' ms' : 'none yet';
  const numerics = s.find((x) => x.name === 'strata_numerics_info');
  $('stat-numerics').textContent = numerics ? numerics.labels.profile : '–';
  if ($('status').classList.contains('error') && $('status').textContent.startsWith('metrics:')) setStatus('');
}

// ---- the KV ledger chart ----

async function refreshLedger() {
  try {
    state.ledger = await getJson('/v1/ledger' + (state.context > 0 ? '?context=' + state.context : ''));
  } catch (e) {
    $('ledger-caption').textContent = 'ledger: ' + e.message;
    return;
  }
  drawLedger();
}

// Memory per request (linear y) against context (log x): the whole and each cache kind, with
// the conversation's context marked. Every number is the server's; the page only draws.
function drawLedger() {
  const L = state.ledger;
  const svg = $('ledger-svg');
  svg.replaceChildren();
  $('ledger-legend').replaceChildren();
  if (!L || !L.contexts.length) return;
  const W = 340, H = 200, left = 50, right = 10, top = 8, bottom = 22;
  const pw = W - left - right, ph = H - top - bottom;
  const xs = L.contexts;
  const x0 = Math.log2(xs[0]), x1 = Math.max(Math.log2(xs[xs.length - 1]), x0 + 1);
  const X = (n) => left + (Math.log2(Math.min(Math.max(n, xs[0]), xs[xs.length - 1])) - x0) / (x1 - x0) * pw;
  const peak = Math.max(...L.bytes, 1);
  const step = niceStep(peak / 4);
  const yMax = Math.ceil(peak / step) * step;
  const Y = (b) => top + ph - (b / yMax) * ph;

  for (let b = 0; b <= yMax + step / 2; b += step) {
    svg.append(svgEl('line', { class: 'grid', x1: left, x2: W - right, y1: Y(b), y2: Y(b) }));
    svg.append(svgEl('text', { x: left - 4, y: Y(b) + 3, 'text-anchor': 'end' }, humanBytes(b)));
  }
  let lastLabelX = -Infinity;
  for (const n of xs) {
    const x = X(n);
    if (x - lastLabelX < 26) continue;  // labels would overlap
    lastLabelX = x;
    svg.append(svgEl('line', { class: 'grid', x1: x, x2: x, y1: top, y2: top + ph }));
    svg.append(svgEl('text', { x, y: H - 8, 'text-anchor': 'middle' }, humanTokens(n)));
  }
  const path = (values) => values.map((b, i) => (i ? 'L' : 'M') + X(xs[i]).toFixed(1) + ',' + Y(b).toFixed(1)).join(' ');
  const kinds = Object.keys(L.by_kind);
  kinds.forEach((kind, i) => {
    const color = KIND_COLORS[i % KIND_COLORS.length];
    svg.append(svgEl('path', { class: 'kind', d: path(L.by_kind[kind]), stroke: color, 'data-kind': kind }));
    const item = el('span', null, kind);
    item.style.setProperty('--swatch', color);
    $('ledger-legend').append(item);
  });
  svg.append(svgEl('path', { class: 'total', id: 'ledger-total', d: path(L.bytes) }));
  const totalItem = el('span', null, 'per request');
  totalItem.style.setProperty('--swatch', 'currentColor');
  $('ledger-legend').prepend(totalItem);

  let caption = humanBytes(L.bytes_per_token) + '/token + ' + humanBytes(L.fixed_bytes) + ' fixed per request; ' +
    humanBytes(L.bytes[L.bytes.length - 1]) + ' at ' + humanTokens(L.max_context) + '.';
  if (L.at) {
    const x = X(L.at.context);
    svg.append(svgEl('line', { class: 'mark', id: 'ledger-marker', x1: x, x2: x, y1: top, y2: top + ph, 'data-context': L.at.context }));
    svg.append(svgEl('circle', { class: 'mark-dot', cx: x, cy: Y(L.at.bytes), r: 3.5 }));
    const anchor = x > left + pw / 2 ? 'end' : 'start';
    svg.append(svgEl('text', { class: 'mark-label', x: x + (anchor === 'end' ? -5 : 5), y: top + 10, 'text-anchor': anchor },
      'this chat: ' + L.at.context + ' tokens'));
    caption = 'This conversation: ' + L.at.context + ' tokens = ' + humanBytes(L.at.bytes) + ' of cache. ' + caption;
  }
  $('ledger-caption').textContent = caption;
}

// 1, 2 or 5 times a power of 1024 or of 10 at or above `raw`: round tick steps in bytes.
function niceStep(raw) {
  let unit = 1;
  while (raw >= unit * 1024) unit *= 1024;
  const r = raw / unit;
  const p = Math.pow(10, Math.floor(Math.log10(Math.max(r, 1e-9))));
  for (const m of [1, 2, 5, 10]) if (m * p >= r) return m * p * unit;
  return 10 * p * unit;
}

// ---- the chat ----

function addMessage(role, text) {
  const root = el('div', 'msg ' + role);
  const view = { root };
  if (role === 'assistant') {
    view.reasoning = el('details');
    view.reasoning.append(el('summary', null, 'Reasoning'));
    view.reasoningText = el('div');
    view.reasoning.append(view.reasoningText);
    view.reasoning.hidden = true;
    root.append(view.reasoning);
  }
  view.content = el('div', 'content', text || '');
  root.append(view.content);
  if (role === 'assistant') {
    view.tools = el('div', 'tools');
    view.meta = el('div', 'meta');
    view.error = el('div', 'error');
    root.append(view.tools, view.meta, view.error);
  }
  $('messages').append(root);
  scrollDown();
  return view;
}

function scrollDown() {
  const m = $('messages');
  m.scrollTop = m.scrollHeight;
}

// Streamed tool calls arrive as pieces keyed by index (OpenAI sends a call's arguments in
// parts; strata sends each call whole once it is complete): join them.
function mergeToolCall(calls, piece) {
  const i = piece.index !== undefined ? piece.index : calls.length;
  const call = calls[i] || (calls[i] = { id: '', type: 'function', function: { name: '', arguments: '' } });
  if (piece.id) call.id = piece.id;
  if (piece.function) {
    if (piece.function.name) call.function.name += piece.function.name;
    if (piece.function.arguments) call.function.arguments += piece.function.arguments;
  }
}

function renderToolCalls(view, calls) {
  view.tools.replaceChildren(...calls.filter(Boolean).map((c) => {
    const box = el('div', 'tool-call');
    box.append(el('b', null, 'tool call '), document.createTextNode(c.function.name + '(' + c.function.arguments + ')'));
    return box;
  }));
}

// Reads an SSE body, calling onData with each event's parsed JSON, until [DONE] or its end.
async function readSse(body, onData) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = /\r?\n\r?\n/.exec(buffer))) {
      const event = buffer.slice(0, cut.index);
      buffer = buffer.slice(cut.index + cut[0].length);
      const data = event.split(/\r?\n/).filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).replace(/^ /, '')).join('\n');
      if (!data) continue;  // a ": keep-alive" comment
      if (data === '[DONE]') { reader.cancel().catch(() => {}); return; }
      onData(JSON.parse(data));
    }
  }
}

function requestBody() {
  const body = {
    messages: state.history,
    stream: true,
    stream_options: { include_usage: true },
    thinking: $('thinking').checked,
  };
  if (state.model) body.model = state.model;
  const temperature = $('temperature').value.trim();
  if (temperature !== '') body.temperature = Number(temperature);
  const maxTokens = $('max-tokens').value.trim();
  if (maxTokens !== '') body.max_tokens = parseInt(maxTokens, 10);
  return body;
}

async function send(text) {
  state.history.push({ role: 'user', content: text });
  const userView = addMessage('user', text);
  const view = addMessage('assistant');
  view.root.dataset.state = 'streaming';
  const reply = { content: '', reasoning: '', toolCalls: [], finish: null, usage: null, error: null };
  const controller = new AbortController();
  state.controller = controller;
  setBusy(true);
  const start = performance.now();
  let firstToken = null;
  try {
    const res = await fetch('/v1/chat/completions', {
      method: 'POST', headers: authHeaders(true), body: JSON.stringify(requestBody()), signal: controller.signal,
    });
    if (!res.ok) throw new Error(await errorText(res));
    await readSse(res.body, (chunk) => {
      if (chunk.error) { reply.error = chunk.error.message || 'server error'; return; }
      if (chunk.usage) reply.usage = chunk.usage;
      for (const choice of chunk.choices || []) {
        const d = choice.delta || {};
        if (d.reasoning_content || d.content || d.tool_calls) firstToken = firstToken || performance.now();
        if (d.reasoning_content) {
          reply.reasoning += d.reasoning_content;
          view.reasoning.hidden = false;
          view.reasoningText.textContent = reply.reasoning;
        }
        if (d.content) {
          reply.content += d.content;
          view.content.textContent = reply.content;
        }
        if (d.tool_calls) {
          for (const piece of d.tool_calls) mergeToolCall(reply.toolCalls, piece);
          renderToolCalls(view, reply.toolCalls);
        }
        if (choice.finish_reason) reply.finish = choice.finish_reason;
      }
      scrollDown();
    });
    view.root.dataset.state = reply.error ? 'error' : 'done';
  } catch (e) {
    if (e.name === 'AbortError') {
      view.root.dataset.state = 'stopped';
      reply.finish = 'stopped';
    } else {
      view.root.dataset.state = 'error';
      reply.error = e.message;
    }
  } finally {
    state.controller = null;
    setBusy(false);
  }
  if (reply.error) view.error.textContent = reply.error;
  const answered = reply.content || reply.reasoning || reply.toolCalls.length || reply.finish;
  if (!answered) {
    // Nothing came back: the turn is not part of the conversation.
    state.history.pop();
    userView.root.classList.add('unsent');
  } else {
    const message = { role: 'assistant', content: reply.content };
    const calls = reply.toolCalls.filter(Boolean);
    if (calls.length) message.tool_calls = calls;
    state.history.push(message);
  }
  const meta = [];
  if (reply.usage) {
    const n = reply.usage.completion_tokens;
    const seconds = (performance.now() - (firstToken || start)) / 1000;
    meta.push(n + ' tokens');
    if (n > 1 && seconds > 0) meta.push(((n - 1) / seconds).toFixed(1) + ' tok/s');
    if (firstToken) meta.push('first token ' + ((firstToken - start)).toFixed(0) + ' ms');
    state.context = reply.usage.prompt_tokens + n;
    meta.push('context ' + state.context + ' tokens');
  }
  if (reply.finish) meta.push('finish: ' + reply.finish);
  view.meta.textContent = meta.join(' · ');
  refreshStats();
  refreshLedger();
}

function setBusy(busy) {
  $('send').disabled = busy;
  $('stop').disabled = !busy;
}

$('composer').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const text = $('prompt').value.trim();
  if (!text || state.controller) return;
  $('prompt').value = '';
  send(text);
});

$('prompt').addEventListener('keydown', (ev) => {
  if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
    ev.preventDefault();
    $('composer').requestSubmit();
  }
});

// Aborting the fetch closes the connection; the server notices and cancels the request.
$('stop').addEventListener('click', () => { if (state.controller) state.controller.abort(); });

$('clear').addEventListener('click', () => {
  if (state.controller) state.controller.abort();
  state.history = [];
  state.context = 0;
  $('messages').replaceChildren();
  refreshLedger();
});

$('api-key').addEventListener('change', () => {
  localStorage.setItem(KEY_STORE, $('api-key').value.trim());
  start();
});

async function start() {
  try {
    await loadModel();
    setStatus('connected');
  } catch (e) {
    $('model').textContent = 'no model';
    setStatus(e.message, true);
  }
  refreshStats();
  refreshLedger();
}

$('api-key').value = localStorage.getItem(KEY_STORE) || '';
start();
setInterval(refreshStats, STATS_EVERY_MS);
</script>
</body>
</html>
)strata_page";
  return page;
}

}  // namespace strata::server
