#include "cli/preload.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>

#include "cli/progress.h"
#include "kernels/parallel.h"

namespace strata::cli {
namespace {

// A byte range of one shard to read in.
struct Span {
  const MappedFile* file = nullptr;
  uint64_t offset = 0, length = 0;
};

// The shard's bytes this process reads: all of it, or its header and the tensors `holds`
// keeps, neighbours merged into one range.
std::vector<Span> spans_of(const SafetensorsFile& f, const TensorFilter& holds) {
  const MappedFile& m = f.mapped();
  if (!holds) return {{&m, 0, m.size()}};
  std::vector<std::pair<uint64_t, uint64_t>> kept;  // [begin, end)
  uint64_t first = m.size();
  for (const TensorInfo& t : f.tensors()) {
    first = std::min<uint64_t>(first, t.offset);
    if (holds(t.name)) kept.push_back({t.offset, t.offset + t.nbytes});
  }
  kept.push_back({0, first});  // the header
  std::sort(kept.begin(), kept.end());
  std::vector<Span> out;
  for (const auto& [b, e] : kept) {
    if (e <= b) continue;
    if (!out.empty() && b <= out.back().offset + out.back().length)
      out.back().length = std::max(out.back().length, e - out.back().offset);
    else
      out.push_back({&m, b, e - b});
  }
  return out;
}

// Reads the spans in through their files' mappings in 64 MB steps, advancing one progress bar.
void read_in(const std::vector<Span>& spans, const std::string& title, double min_bytes) {
  uint64_t total = 0, done = 0;
  for (const Span& s : spans) total += s.length;
  std::unique_ptr<ProgressBar> bar;
  if (double(total) >= min_bytes) bar = std::make_unique<ProgressBar>(title);
  const uint64_t chunk = uint64_t(64) << 20;
  for (const Span& s : spans) {
    for (uint64_t off = 0; off < s.length; off += chunk) {
      const uint64_t n = std::min(chunk, s.length - off);
      s.file->populate(size_t(s.offset + off), size_t(n));
      done += n;
      if (bar) bar->update(done, total);
    }
  }
  if (bar) bar->finish();
}

std::vector<Span> spans_of_files(const SafetensorsCheckpoint& ckpt, const std::vector<const MappedFile*>& files,
                                 const TensorFilter& holds) {
  std::vector<Span> out;
  for (const auto& f : ckpt.files())
    if (std::find(files.begin(), files.end(), &f->mapped()) != files.end())
      for (const Span& s : spans_of(*f, holds)) out.push_back(s);
  return out;
}

}  // namespace

PreloadResult preload_checkpoint(const SafetensorsCheckpoint& ckpt, const std::string& label, double min_bytes, bool force,
                                 const TensorFilter& holds) {
  PreloadResult r;
  std::vector<const MappedFile*> files;
  for (const auto& f : ckpt.files()) {
    files.push_back(&f->mapped());
    for (const Span& s : spans_of(*f, holds)) r.bytes += s.length;
  }
  const double ram = double(::sysconf(_SC_PHYS_PAGES)) * double(::sysconf(_SC_PAGESIZE));
  if (!force && double(r.bytes) > 0.75 * ram) return r;
  read_in(spans_of_files(ckpt, files, holds), "loading " + label, min_bytes);
  r.read_in = true;

  // Shards mapped mostly in small pages: cached in small folios by an earlier plain read.
  // A shard read in part (expert parallelism) can have at most its spans' whole 2 MB pages.
  std::vector<const MappedFile*> small;
  for (const auto& f : ckpt.files()) {
    const MappedFile* m = &f->mapped();
    uint64_t mappable = 0;
    for (const Span& sp : spans_of(*f, holds)) {
      const uint64_t page = MappedFile::kHugePage;
      const uint64_t b = (sp.offset + page - 1) / page * page, e = (sp.offset + sp.length) / page * page;
      if (e > b) mappable += e - b;
    }
    mappable = std::min<uint64_t>(mappable, m->huge_mappable_bytes());
    if (mappable > 0 && m->huge_mapped_bytes() < mappable / 10 * 9) small.push_back(m);
  }
  if (!small.empty()) {
    // One shard first: where the kernel or filesystem cannot cache files in 2 MB folios, a
    // second read gains nothing, so the others are left as they are.
    small.front()->recache_in_huge_pages();
    read_in(spans_of_files(ckpt, {small.front()}, holds), "caching " + label + " in 2 MB pages", min_bytes);
    r.recached_bytes += small.front()->size();
    if (small.front()->huge_mapped_bytes() > 0) {
      small.erase(small.begin());
      for (const MappedFile* m : small) {
        m->recache_in_huge_pages();
        r.recached_bytes += m->size();
      }
      read_in(spans_of_files(ckpt, small, holds), "caching " + label + " in 2 MB pages", min_bytes);
    }
  }
  for (const MappedFile* m : files) {
    r.huge_bytes += m->huge_mapped_bytes();
    r.huge_mappable += m->huge_mappable_bytes();
  }
  return r;
}

double read_through_checkpoint(const SafetensorsCheckpoint& ckpt, const TensorFilter& holds) {
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t chunk = int64_t(4) << 20;
  for (const auto& f : ckpt.files()) {
    const uint8_t* base = f->mapped().data();
    if (!base) continue;
    for (const Span& sp : spans_of(*f, holds)) {
      const uint8_t* p = base + sp.offset;
      const int64_t size = int64_t(sp.length);
      kernels::parallel_for((size + chunk - 1) / chunk, 1, [&](int64_t b, int64_t e) {
        uint64_t acc = 0;
        for (int64_t c = b; c < e; ++c)
          for (int64_t off = c * chunk; off < std::min(size, (c + 1) * chunk); off += 64) acc += p[off];
        volatile uint64_t sink = acc;  // the reads may not be optimized away
        (void)sink;
      });
    }
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void lock_checkpoint(const SafetensorsCheckpoint& ckpt) {
  for (const auto& f : ckpt.files()) f->mapped().lock();
}

}  // namespace strata::cli
