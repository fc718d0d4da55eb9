// The request journal's cost per token (server/journal.h): append() on the engine thread (a
// mutex and two vector pushes), and a sync interval's batch — 16 running requests' tokens
// encoded as one record per request, written and fsynced — per token it carries; and the pause
// of a compaction.
// Run: build/<dir>/bench/journal_bench [--benchmark_filter=...]; the journal is written under
// the system's temporary directory, so the fsync cost is that disk's.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <unistd.h>

#include "server/journal.h"

namespace {

namespace fs = std::filesystem;
using strata::server::Journal;
using strata::server::JournalOptions;

constexpr int kRequests = 16;

struct Fixture {
  fs::path dir = fs::temp_directory_path() / ("strata_journal_bench_" + std::to_string(::getpid()));
  std::unique_ptr<Journal> j;
  std::vector<uint64_t> seqs;
  Fixture() {
    fs::remove_all(dir);
    JournalOptions o;
    o.dir = dir.string();
    o.sync_interval = std::chrono::hours(1);  // synced by the benchmark itself
    j = std::make_unique<Journal>(o);
    for (int r = 0; r < kRequests; ++r) seqs.push_back(j->begin("bench-" + std::to_string(r), {{"body", "{}"}}, 1));
  }
  ~Fixture() {
    j.reset();
    fs::remove_all(dir);
  }
};

void BM_JournalAppend(benchmark::State& st) {
  Fixture f;
  int32_t t = 0;
  for (auto _ : st) {
    f.j->append(f.seqs[size_t(t % kRequests)], 0, t);
    if (++t % 100000 == 0) f.j->sync();  // bounded buffers
  }
  st.SetItemsProcessed(st.iterations());
}
BENCHMARK(BM_JournalAppend);

// One sync interval: `tokens` per request (e.g. 50 ms at 20 tokens/s is 1), then the write and
// fsync. Items are tokens.
void BM_JournalSyncInterval(benchmark::State& st) {
  Fixture f;
  const int per = int(st.range(0));
  int32_t t = 0;
  for (auto _ : st) {
    for (int k = 0; k < per; ++k)
      for (uint64_t s : f.seqs) f.j->append(s, 0, t++ % 120000);
    f.j->sync();
  }
  st.SetItemsProcessed(st.iterations() * per * kRequests);
  st.counters["bytes_per_token"] = benchmark::Counter(double(f.j->stats().bytes) / double(t));
}
BENCHMARK(BM_JournalSyncInterval)->Arg(1)->Arg(4)->Arg(16)->UseRealTime();

// Compaction: a journal of `requests` unfinished requests of `tokens` tokens each (an 8 MiB
// file holds ~1000 of 2000 tokens), opened: read, checked, rewritten to a temporary file,
// fsynced and renamed. Serving-time compaction is the same rewrite without the read, run with
// the file's lock held, so a request that arrives meanwhile waits for it in begin(): this
// bounds that pause from above.
void BM_JournalCompaction(benchmark::State& st) {
  const fs::path dir = fs::temp_directory_path() / ("strata_journal_compact_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const int requests = int(st.range(0)), tokens = int(st.range(1));
  JournalOptions o;
  o.dir = dir.string();
  o.sync_interval = std::chrono::hours(1);
  {
    Journal j(o);
    for (int r = 0; r < requests; ++r) {
      const uint64_t s = j.begin("bench-" + std::to_string(r), {{"body", "{}"}}, 1);
      for (int t = 0; t < tokens; ++t) j.append(s, 0, (r * 7919 + t) % 120000);
      if (r % 64 == 63) j.sync();
    }
  }
  int64_t bytes = 0;
  for (auto _ : st) {
    Journal j(o);
    bytes = j.stats().bytes;
  }
  st.counters["file_bytes"] = double(fs::file_size(dir / "requests.journal"));
  st.counters["requests"] = requests;
  (void)bytes;
  fs::remove_all(dir);
}
BENCHMARK(BM_JournalCompaction)->Args({16, 256})->Args({256, 2000})->Args({1000, 2000})->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
