// The request journal of `strata serve --journal DIR` (format: journal_file.h), in
// DIR/requests.journal. A request's begin record is written and fsynced before it reaches the
// engine; its accepted tokens and its end are buffered and written, one tokens record per
// request stream, with an fsync, every sync interval by the journal's own thread, so the
// engine thread that reports tokens never waits on the disk. After a crash at most the last
// interval's tokens are missing, which costs nothing but recomputation: a resumed request
// regenerates them identically.
//
// Opening reads the file, truncates a torn or corrupt tail, and rewrites the journal with only
// what is still of use (compaction): unfinished requests, and finished ones kept `retain` after
// their end so that a client can still fetch them. The same compaction runs while serving when
// the file has grown to several times that.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/journal_file.h"

namespace strata::server {

struct JournalOptions {
  std::string dir;
  std::chrono::milliseconds sync_interval{50};
  std::chrono::seconds retain{600};  // a finished request stays this long after its end
  int64_t compact_bytes = 8 << 20;    // compaction while serving: not below this file size
};

struct JournalStats {
  int64_t records = 0, bytes = 0, syncs = 0, compactions = 0;
};

class Journal {
 public:
  // Creates DIR when missing. Throws strata::Error when the directory or file cannot be used
  // or another process has the journal open; a bad tail is not an error (see recovery()).
  explicit Journal(JournalOptions opt);
  ~Journal();  // writes and fsyncs what is buffered
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // What the file held when opened: its requests (finished ones included) and its bad tail.
  const JournalScan& recovery() const { return recovered_; }
  std::string path() const;
  const JournalOptions& options() const { return opt_; }

  // A new request: durable when this returns. Returns its number for append() and end().
  uint64_t begin(const std::string& key, const nlohmann::json& meta, size_t streams);
  // Any thread; never waits on the disk. Unknown numbers and streams are ignored.
  void append(uint64_t seq, size_t stream, int32_t token);
  // `cancelled`: ended by its client's cancellation (not to be resumed).
  void end(uint64_t seq, bool cancelled = false);
  // Writes and fsyncs what is buffered now (the sync thread's work, on demand).
  void sync();
  JournalStats stats();

 private:
  struct Live {
    JournalEntry entry;
    std::chrono::steady_clock::time_point ended_at;
  };
  void write_all(const std::vector<uint8_t>& bytes);  // file_mu_ held
  void rewrite();                                     // file_mu_ held; compacts from live_
  void loop();

  JournalOptions opt_;
  JournalScan recovered_;
  int fd_ = -1;
  int lock_fd_ = -1;  // DIR/requests.lock, held (flock) while open
  std::mutex file_mu_;  // the file: writes, fsyncs, rewrites (taken before mu_)
  std::mutex mu_;       // everything below
  std::condition_variable cv_;
  bool stopping_ = false;
  bool broken_ = false;  // file_mu_: a write failed; the next sync rewrites the file
  uint64_t next_seq_ = 1;
  std::map<uint64_t, Live> live_;
  std::map<std::pair<uint64_t, size_t>, std::vector<int32_t>> pending_tokens_;
  std::vector<uint64_t> pending_ends_;
  int64_t file_bytes_ = 0, live_bytes_ = 0;  // live_bytes_: the file's size after the last rewrite
  JournalStats stats_;
  std::thread thread_;
};

}  // namespace strata::server
