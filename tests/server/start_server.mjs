// Starts `strata serve` with args on a port it picks; resolves with {url, proc, exited, err (its
// stderr so far)} once it prints its address, rejects if it exits or stays silent for a minute.
import { spawn } from 'node:child_process';

export function startStrataServe(bin, args) {
  const proc = spawn(bin, ['serve', '--host', '127.0.0.1', '--port', '0', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal, err })));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('server did not start: ' + err)), 60000);
    proc.stderr.on('data', (d) => {
      err += d;
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(err);
      if (m && !proc.started) {
        proc.started = true;
        clearTimeout(timer);
        resolve({ url: m[1], proc, exited, get err() { return err; } });
      }
    });
    proc.on('exit', () => reject(new Error('server exited: ' + err)));
  });
}
