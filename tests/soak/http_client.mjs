// Minimal HTTP client for the soak test (node:http only): one fresh connection per request, so
// that a dropped connection is always the server's doing and never a stale keep-alive socket.
import http from 'node:http';

const TIMEOUT_MS = 180000;  // a request still open after this long counts as a hang

function open(base, path, method, body) {
  const u = new URL(path, base);
  const headers = {};
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    headers['Content-Length'] = Buffer.byteLength(body);
  }
  return http.request({ host: u.hostname, port: u.port, path: u.pathname + u.search, method, headers, agent: false });
}

// Resolves with {status, text, json (or null)}; rejects on a transport error or a hang.
export function call(base, path, { method = 'POST', body } = {}) {
  return new Promise((resolve, reject) => {
    const req = open(base, path, method, body);
    req.setTimeout(TIMEOUT_MS, () => req.destroy(new Error(`no answer in ${TIMEOUT_MS / 1000} s`)));
    req.on('error', reject);
    req.on('response', (res) => {
      const parts = [];
      res.on('data', (d) => parts.push(d));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        let json = null;
        try { json = JSON.parse(text); } catch {}
        resolve({ status: res.statusCode, text, json });
      });
    });
    req.end(body);
  });
}

// A streamed completion. Resolves with {status, events (parsed `data:` objects), done (saw
// [DONE]), ttft (ms to the first data event), aborted, text (the body when not 200)}.
// abortAfter = k: the socket is destroyed once k data events have arrived (a client that goes
// away mid-stream).
export function stream(base, path, body, { abortAfter = 0 } = {}) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const out = { status: 0, events: [], done: false, ttft: null, aborted: false, text: '' };
    const req = open(base, path, 'POST', body);
    req.setTimeout(TIMEOUT_MS, () => req.destroy(new Error(`stream open after ${TIMEOUT_MS / 1000} s`)));
    req.on('error', (e) => (out.aborted ? resolve(out) : reject(e)));
    req.on('response', (res) => {
      out.status = res.statusCode;
      res.setEncoding('utf8');
      let buf = '';
      res.on('data', (d) => {
        if (out.aborted) return;
        if (out.status !== 200) return void (out.text += d);
        buf += d;
        let k;
        while ((k = buf.indexOf('\n\n')) >= 0) {
          const ev = buf.slice(0, k);
          buf = buf.slice(k + 2);
          if (!ev.startsWith('data: ')) continue;  // ": keep-alive" comments
          const data = ev.slice(6);
          if (data === '[DONE]') { out.done = true; continue; }
          if (out.ttft === null) out.ttft = performance.now() - t0;
          try {
            out.events.push(JSON.parse(data));
          } catch {
            req.destroy();
            return reject(new Error('a stream event is not JSON: ' + data.slice(0, 200)));
          }
          if (abortAfter > 0 && out.events.length >= abortAfter && !out.done) {
            out.aborted = true;
            req.destroy();
            return resolve(out);
          }
        }
      });
      res.on('error', (e) => (out.aborted ? resolve(out) : reject(e)));
      res.on('end', () => resolve(out));
      res.on('close', () => resolve(out));  // a cut stream: done stays false (a no-op after 'end')
    });
    req.end(body);
  });
}
