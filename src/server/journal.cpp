#include "server/journal.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/error.h"

namespace strata::server {

namespace fs = std::filesystem;

namespace {

const char* kFile = "requests.journal";

[[noreturn]] void fail(const std::string& what, const std::string& path) {
  throw Error("journal: cannot " + what + " " + path + ": " + std::strerror(errno));
}

void write_fd(int fd, const uint8_t* p, size_t n, const std::string& path) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      fail("write", path);
    }
    p += w;
    n -= size_t(w);
  }
}

// A rename is durable once its directory is synced.
void sync_dir(const std::string& dir) {
  const int d = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (d < 0) fail("open", dir);
  ::fsync(d);
  ::close(d);
}

}  // namespace

std::string Journal::path() const { return (fs::path(opt_.dir) / kFile).string(); }

Journal::Journal(JournalOptions opt) : opt_(std::move(opt)) {
  std::error_code ec;
  fs::create_directories(opt_.dir, ec);
  if (ec) throw Error("journal: cannot create " + opt_.dir + ": " + ec.message());
  // One server per journal: a second would interleave its records with ours. The lock goes
  // with the process, so a killed server leaves none behind.
  const std::string lock = (fs::path(opt_.dir) / "requests.lock").string();
  lock_fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock_fd_ < 0) fail("open", lock);
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    ::close(lock_fd_);
    throw Error("journal: " + opt_.dir + " is in use by another process");
  }
  const std::string p = path();
  if (fs::exists(p)) {
    std::ifstream f(p, std::ios::binary);
    if (!f) fail("read", p);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    recovered_ = scan_journal(bytes);
  }
  const auto now = std::chrono::steady_clock::now();
  for (const auto& e : recovered_.entries) {
    live_[e.seq] = {e, now};  // a finished one is kept `retain` from now: its client may be about to ask
    next_seq_ = std::max(next_seq_, e.seq + 1);
  }
  {
    std::lock_guard fl(file_mu_);
    rewrite();  // drops the bad tail with everything else no longer needed
  }
  thread_ = std::thread([this] { loop(); });
}

Journal::~Journal() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
  try {
    sync();
  } catch (...) {  // a destructor cannot report it; the next start reads what reached the disk
  }
  if (fd_ >= 0) ::close(fd_);
  ::close(lock_fd_);
}

void Journal::write_all(const std::vector<uint8_t>& bytes) {
  if (bytes.empty()) return;
  write_fd(fd_, bytes.data(), bytes.size(), path());
  file_bytes_ += int64_t(bytes.size());
}

// Writes the live requests to a new file and renames it over the journal: a crash at any
// point leaves either the old journal or the new one.
void Journal::rewrite() {
  std::vector<uint8_t> out(kJournalMagic, kJournalMagic + sizeof kJournalMagic);
  {
    std::lock_guard lk(mu_);
    const auto now = std::chrono::steady_clock::now();
    for (auto it = live_.begin(); it != live_.end();) {
      if (it->second.entry.ended && now - it->second.ended_at >= opt_.retain) it = live_.erase(it);
      else ++it;
    }
    for (const auto& [seq, l] : live_) {
      auto rec = begin_record(l.entry);
      out.insert(out.end(), rec.begin(), rec.end());
      for (size_t s = 0; s < l.entry.tokens.size(); ++s)
        if (!l.entry.tokens[s].empty()) {
          rec = tokens_record(seq, s, l.entry.tokens[s]);
          out.insert(out.end(), rec.begin(), rec.end());
        }
      if (l.entry.ended) {
        rec = end_record(seq, l.entry.cancelled);
        out.insert(out.end(), rec.begin(), rec.end());
      }
    }
    // Everything buffered is in the mirror, so in the new file.
    pending_tokens_.clear();
    pending_ends_.clear();
  }
  const std::string p = path(), tmp = p + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) fail("create", tmp);
  write_fd(fd, out.data(), out.size(), tmp);
  if (::fdatasync(fd) != 0) fail("sync", tmp);
  ::close(fd);
  if (::rename(tmp.c_str(), p.c_str()) != 0) fail("rename", tmp);
  sync_dir(opt_.dir);
  if (fd_ >= 0) ::close(fd_);
  fd_ = ::open(p.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd_ < 0) fail("open", p);
  file_bytes_ = live_bytes_ = int64_t(out.size());
  ++stats_.compactions;
}

uint64_t Journal::begin(const std::string& key, const nlohmann::json& meta, size_t streams) {
  JournalEntry e;
  e.key = key;
  e.meta = meta;
  e.tokens.resize(streams);
  std::lock_guard fl(file_mu_);
  if (broken_) rewrite(), broken_ = false;
  {
    std::lock_guard lk(mu_);
    e.seq = next_seq_++;
  }
  const auto rec = begin_record(e);
  try {
    write_all(rec);
    if (::fdatasync(fd_) != 0) fail("sync", path());
  } catch (...) {
    broken_ = true;
    throw;
  }
  std::lock_guard lk(mu_);
  ++stats_.records, ++stats_.syncs;
  stats_.bytes += int64_t(rec.size());
  const uint64_t seq = e.seq;
  live_[seq] = {std::move(e), {}};
  return seq;
}

void Journal::append(uint64_t seq, size_t stream, int32_t token) {
  std::lock_guard lk(mu_);
  auto it = live_.find(seq);
  if (it == live_.end() || it->second.entry.ended || stream >= it->second.entry.tokens.size()) return;
  it->second.entry.tokens[stream].push_back(token);
  pending_tokens_[{seq, stream}].push_back(token);
}

void Journal::end(uint64_t seq, bool cancelled) {
  std::lock_guard lk(mu_);
  auto it = live_.find(seq);
  if (it == live_.end() || it->second.entry.ended) return;
  it->second.entry.ended = true;
  it->second.entry.cancelled = cancelled;
  it->second.ended_at = std::chrono::steady_clock::now();
  pending_ends_.push_back(seq);
}

void Journal::sync() {
  std::lock_guard fl(file_mu_);
  if (broken_) {  // a failed write may have left a torn record mid-file: start a clean one
    rewrite();
    broken_ = false;
    return;
  }
  std::vector<uint8_t> out;
  int64_t records = 0;
  bool compact = false;
  {
    std::lock_guard lk(mu_);
    if (pending_tokens_.empty() && pending_ends_.empty()) return;
    for (const auto& [k, ts] : pending_tokens_) {  // a request's tokens before its end
      auto rec = tokens_record(k.first, k.second, ts);
      out.insert(out.end(), rec.begin(), rec.end());
      ++records;
    }
    for (uint64_t seq : pending_ends_) {
      auto it = live_.find(seq);
      auto rec = end_record(seq, it != live_.end() && it->second.entry.cancelled);
      out.insert(out.end(), rec.begin(), rec.end());
      ++records;
    }
    pending_tokens_.clear();
    pending_ends_.clear();
    compact = file_bytes_ + int64_t(out.size()) > std::max(opt_.compact_bytes, 4 * live_bytes_);
  }
  try {
    write_all(out);
    if (::fdatasync(fd_) != 0) fail("sync", path());
  } catch (...) {
    broken_ = true;  // what was buffered is still in live_: the rewrite will have it
    throw;
  }
  {
    std::lock_guard lk(mu_);
    stats_.records += records;
    stats_.bytes += int64_t(out.size());
    ++stats_.syncs;
  }
  if (compact) rewrite();
}

JournalStats Journal::stats() {
  std::lock_guard lk(mu_);
  return stats_;
}

void Journal::loop() {
  std::unique_lock lk(mu_);
  while (!stopping_) {
    cv_.wait_for(lk, opt_.sync_interval, [&] { return stopping_; });
    if (stopping_) break;
    lk.unlock();
    try {
      sync();
    } catch (const std::exception&) {  // e.g. a full disk: the next interval retries (sync())
    }
    lk.lock();
  }
}

}  // namespace strata::server
