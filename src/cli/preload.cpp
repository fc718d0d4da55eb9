#include "cli/preload.h"

#include <unistd.h>

#include "cli/progress.h"
#include "io/safetensors.h"

namespace strata::cli {

void preload_checkpoint(const std::string& dir, double min_bytes) {
  auto ckpt = SafetensorsCheckpoint::open_dir(dir);
  uint64_t total = 0;
  for (const auto& f : ckpt.files()) total += f->mapped().size();
  if (double(total) < min_bytes) return;
  // A checkpoint larger than memory cannot stay resident: reading it all would only evict
  // itself. Leave those to demand paging.
  const double ram = double(::sysconf(_SC_PHYS_PAGES)) * double(::sysconf(_SC_PAGESIZE));
  if (double(total) > 0.75 * ram) return;
  ProgressBar bar("loading " + dir);
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
      bar.update(done, total);
    }
  }
  bar.finish();
}

}  // namespace strata::cli
