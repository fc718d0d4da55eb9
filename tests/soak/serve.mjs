// `strata serve` for the soak: started on a port it picks, its stderr (the per-request log)
// appended to a file rather than kept in memory, which a long run would grow without bound.
import { spawn } from 'node:child_process';
import fs from 'node:fs';

export function startServe(bin, args, logPath) {
  const log = fs.openSync(logPath, 'a');
  const proc = spawn(bin, ['serve', '--host', '127.0.0.1', '--port', '0', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let head = '';  // the first lines, for the address and a start-up failure
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('strata serve did not start in 60 s: ' + head)), 60000);
    proc.stderr.on('data', (d) => {
      fs.writeSync(log, d);
      if (head.length < 8192) head += d;
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(head);
      if (m && !proc.started) {
        proc.started = true;
        clearTimeout(timer);
        resolve({ url: m[1], proc, exited });
      }
    });
    proc.on('exit', (code, signal) => {
      if (!proc.started) reject(new Error(`strata serve exited (${code ?? signal}) before listening: ${head}`));
    });
  });
}

// VmRSS of a process in bytes (kind 'Anon' or 'File': that part of it), or null once it is gone.
export function rssBytes(pid, kind = '') {
  try {
    const m = new RegExp(`${kind ? 'Rss' + kind : 'VmRSS'}:\\s+(\\d+) kB`).exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

// Resident bytes of the one mapping of `bytes` (rounded up to pages) in a process: the cache
// pool's, whose pages count in RSS as they are first written. null if none or several match.
export function mappingRss(pid, bytes) {
  const kb = Math.ceil(bytes / 4096) * 4;
  let size = null, found = [];
  try {
    for (const line of fs.readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
      const m = /^(Size|Rss):\s+(\d+) kB/.exec(line);
      if (m && m[1] === 'Size') size = Number(m[2]);
      else if (m && size === kb) found.push(Number(m[2]) * 1024);
    }
  } catch {
    return null;
  }
  return found.length === 1 ? found[0] : null;
}

// CPU seconds a process has used (user + system), or null once it is gone.
export function cpuSeconds(pid) {
  try {
    const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(f[11]) + Number(f[12])) / 100;  // utime, stime in clock ticks (USER_HZ = 100)
  } catch {
    return null;
  }
}

// CPU seconds the whole machine has been busy (all cores, everything but idle and iowait).
export function machineBusySeconds() {
  const f = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  return (f.reduce((a, b) => a + b, 0) - f[3] - f[4]) / 100;
}

// Prometheus text → {name{labels}: value}; sums are left to the caller.
export function parseMetrics(text) {
  const out = {};
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*(?:\{[^}]*\})?) (\S+)$/.exec(line);
    if (m) out[m[1]] = Number(m[2]);
  }
  return out;
}

// Sum of every series of a metric (all label sets).
export function metricSum(metrics, name) {
  let s = 0;
  for (const [k, v] of Object.entries(metrics)) if (k === name || k.startsWith(name + '{')) s += v;
  return s;
}
