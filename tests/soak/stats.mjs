// Percentiles and the per-third latency table of the soak's summary.

// Nearest-rank percentile of xs (ms); null for no samples.
export function pct(xs, p) {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

// Requests started in [from, to) split into three equal thirds: count, p50 and p99 of `field`.
export function thirds(records, field, from, to) {
  const w = (to - from) / 3;
  return [0, 1, 2].map((k) => {
    const xs = records.filter((r) => r.start >= from + k * w && r.start < from + (k + 1) * w && r[field] != null)
      .map((r) => r[field]);
    return { from_s: (from + k * w) / 1000, to_s: (from + (k + 1) * w) / 1000, n: xs.length, p50_ms: pct(xs, 50), p99_ms: pct(xs, 99) };
  });
}

export const mb = (bytes) => (bytes == null ? 'n/a' : (bytes / 1048576).toFixed(1) + ' MiB');
export const ms = (x) => (x == null ? 'n/a' : x.toFixed(0) + ' ms');
