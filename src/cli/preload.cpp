#include "cli/preload.h"

#include <unistd.h>

#include "cli/progress.h"

namespace strata::cli {

bool preload_checkpoint(const SafetensorsCheckpoint& ckpt, const std::string& label, double min_bytes, bool force) {
  uint64_t total = 0;
  for (const auto& f : ckpt.files()) total += f->mapped().size();
  const double ram = double(::sysconf(_SC_PHYS_PAGES)) * double(::sysconf(_SC_PAGESIZE));
  if (!force && double(total) > 0.75 * ram) return false;
  std::unique_ptr<ProgressBar> bar;
  if (double(total) >= min_bytes) bar = std::make_unique<ProgressBar>("loading " + label);
  const size_t page = size_t(::sysconf(_SC_PAGESIZE));
  const size_t chunk = size_t(64) << 20;
  uint64_t done = 0;
  volatile uint8_t sink = 0;
  for (const auto& f : ckpt.files()) {
    const auto& m = f->mapped();
    for (size_t off = 0; off < m.size(); off += chunk) {
      const size_t n = std::min(chunk, m.size() - off);
      m.prefetch(off, n);
      uint8_t acc = 0;
      for (size_t i = 0; i < n; i += page) acc ^= m.data()[off + i];
      sink ^= acc;
      done += n;
      if (bar) bar->update(done, total);
    }
  }
  if (bar) bar->finish();
  return true;
}

void lock_checkpoint(const SafetensorsCheckpoint& ckpt) {
  for (const auto& f : ckpt.files()) f->mapped().lock();
}

}  // namespace strata::cli
