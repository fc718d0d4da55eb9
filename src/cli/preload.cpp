#include "cli/preload.h"

#include <unistd.h>

#include <chrono>
#include <memory>

#include "cli/progress.h"
#include "kernels/parallel.h"

namespace strata::cli {
namespace {

// Reads each file in through its mapping in 64 MB steps, advancing one progress bar.
void read_in(const std::vector<const MappedFile*>& files, const std::string& title, double min_bytes) {
  uint64_t total = 0, done = 0;
  for (const MappedFile* m : files) total += m->size();
  std::unique_ptr<ProgressBar> bar;
  if (double(total) >= min_bytes) bar = std::make_unique<ProgressBar>(title);
  const size_t chunk = size_t(64) << 20;
  for (const MappedFile* m : files) {
    for (size_t off = 0; off < m->size(); off += chunk) {
      const size_t n = std::min(chunk, m->size() - off);
      m->populate(off, n);
      done += n;
      if (bar) bar->update(done, total);
    }
  }
  if (bar) bar->finish();
}

}  // namespace

PreloadResult preload_checkpoint(const SafetensorsCheckpoint& ckpt, const std::string& label, double min_bytes, bool force) {
  PreloadResult r;
  std::vector<const MappedFile*> files;
  for (const auto& f : ckpt.files()) {
    files.push_back(&f->mapped());
    r.bytes += f->mapped().size();
  }
  const double ram = double(::sysconf(_SC_PHYS_PAGES)) * double(::sysconf(_SC_PAGESIZE));
  if (!force && double(r.bytes) > 0.75 * ram) return r;
  read_in(files, "loading " + label, min_bytes);
  r.read_in = true;

  // Shards mapped mostly in small pages: cached in small folios by an earlier plain read.
  std::vector<const MappedFile*> small;
  for (const MappedFile* m : files)
    if (m->huge_mappable_bytes() > 0 && m->huge_mapped_bytes() < m->huge_mappable_bytes() / 10 * 9) small.push_back(m);
  if (!small.empty()) {
    // One shard first: where the kernel or filesystem cannot cache files in 2 MB folios, a
    // second read gains nothing, so the others are left as they are.
    small.front()->recache_in_huge_pages();
    read_in({small.front()}, "caching " + label + " in 2 MB pages", min_bytes);
    r.recached_bytes += small.front()->size();
    if (small.front()->huge_mapped_bytes() > 0) {
      small.erase(small.begin());
      for (const MappedFile* m : small) {
        m->recache_in_huge_pages();
        r.recached_bytes += m->size();
      }
      read_in(small, "caching " + label + " in 2 MB pages", min_bytes);
    }
  }
  for (const MappedFile* m : files) {
    r.huge_bytes += m->huge_mapped_bytes();
    r.huge_mappable += m->huge_mappable_bytes();
  }
  return r;
}

double read_through_checkpoint(const SafetensorsCheckpoint& ckpt) {
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t chunk = int64_t(4) << 20;
  for (const auto& f : ckpt.files()) {
    const MappedFile& m = f->mapped();
    const uint8_t* base = m.data();
    const int64_t size = int64_t(m.size());
    if (!base || size == 0) continue;
    kernels::parallel_for((size + chunk - 1) / chunk, 1, [&](int64_t b, int64_t e) {
      uint64_t acc = 0;
      for (int64_t c = b; c < e; ++c)
        for (int64_t off = c * chunk; off < std::min(size, (c + 1) * chunk); off += 64) acc += base[off];
      volatile uint64_t sink = acc;  // the reads may not be optimized away
      (void)sink;
    });
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void lock_checkpoint(const SafetensorsCheckpoint& ckpt) {
  for (const auto& f : ckpt.files()) f->mapped().lock();
}

}  // namespace strata::cli
