// The request journal: what is begun, appended and ended reads back the same after a reopen;
// a journal cut at every byte or with any bit flipped reads back as a prefix of its records,
// never garbage, and reopening truncates the bad tail; the sync thread writes without being
// asked; finished requests are compacted away after their retention.
#include "server/journal.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>
#include <unistd.h>

#include "core/error.h"

namespace strata::server {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

struct TempDir {
  fs::path dir;
  explicit TempDir(const std::string& name)
      : dir(fs::temp_directory_path() / ("strata_journal_" + name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(dir);
  }
  ~TempDir() { fs::remove_all(dir); }
};

std::vector<uint8_t> read_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path& p, std::span<const uint8_t> b) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

JournalOptions options(const TempDir& t) {
  JournalOptions o;
  o.dir = t.dir.string();
  o.sync_interval = std::chrono::milliseconds(20);
  return o;
}

TEST(Journal, ReadsBackWhatWasWritten) {
  TempDir t("roundtrip");
  {
    Journal j(options(t));
    EXPECT_TRUE(j.recovery().entries.empty());
    const uint64_t a = j.begin("chatcmpl-a", {{"body", "{\"x\":1}"}, {"stream", true}}, 2);
    const uint64_t b = j.begin("cmpl-b", json::object(), 1);
    for (int32_t k = 0; k < 5; ++k) j.append(a, 0, 100 + k), j.append(a, 1, 200 + k);
    j.sync();
    j.append(a, 0, 105);
    j.append(b, 0, 7);
    j.append(b, 3, 9);   // no such stream: ignored
    j.append(999, 0, 9);  // no such request: ignored
    j.end(b);
    j.append(b, 0, 8);  // after its end: ignored
  }
  Journal j(options(t));
  const auto& r = j.recovery();
  EXPECT_EQ(r.bad_bytes, 0);
  ASSERT_EQ(r.entries.size(), 2u);
  EXPECT_EQ(r.entries[0].key, "chatcmpl-a");
  EXPECT_EQ(r.entries[0].meta.at("body"), "{\"x\":1}");
  EXPECT_EQ(r.entries[0].tokens, (std::vector<std::vector<int32_t>>{{100, 101, 102, 103, 104, 105}, {200, 201, 202, 203, 204}}));
  EXPECT_FALSE(r.entries[0].ended);
  EXPECT_EQ(r.entries[1].key, "cmpl-b");
  EXPECT_EQ(r.entries[1].tokens, (std::vector<std::vector<int32_t>>{{7}}));
  EXPECT_TRUE(r.entries[1].ended);
  // New requests are numbered after the recovered ones.
  EXPECT_GT(j.begin("c", json::object(), 1), r.entries[1].seq);
  // One journal, one user.
  EXPECT_THROW(Journal{options(t)}, Error);
}

// A request its client cancelled ends with the mark, which survives the compaction at opening.
TEST(Journal, ACancelledEndReadsBackAsCancelled) {
  TempDir t("cancelled");
  {
    Journal j(options(t));
    const uint64_t a = j.begin("a", json::object(), 1), b = j.begin("b", json::object(), 1);
    j.append(a, 0, 5);
    j.end(a, true);
    j.end(b);
  }
  for (int open = 0; open < 2; ++open) {  // the second opening reads the first one's rewrite
    Journal j(options(t));
    const auto& r = j.recovery();
    EXPECT_EQ(r.bad_bytes, 0);
    ASSERT_EQ(r.entries.size(), 2u);
    EXPECT_TRUE(r.entries[0].ended && r.entries[0].cancelled);
    EXPECT_EQ(r.entries[0].tokens, (std::vector<std::vector<int32_t>>{{5}}));
    EXPECT_TRUE(r.entries[1].ended);
    EXPECT_FALSE(r.entries[1].cancelled);
  }
  // A mark that is not a boolean ends the journal there.
  JournalEntry e;
  e.seq = 1, e.key = "a", e.tokens.resize(1);
  std::vector<uint8_t> bytes(kJournalMagic, kJournalMagic + sizeof kJournalMagic);
  for (const auto& rec : {begin_record(e), journal_record({{"n", 1}, {"e", true}, {"c", 1}})})
    bytes.insert(bytes.end(), rec.begin(), rec.end());
  const JournalScan scan = scan_journal(bytes);
  EXPECT_EQ(scan.problem, "a malformed end record");
  ASSERT_EQ(scan.entries.size(), 1u);
  EXPECT_FALSE(scan.entries[0].ended);
}

TEST(Journal, TheSyncThreadWritesWithinItsInterval) {
  TempDir t("interval");
  Journal j(options(t));
  const uint64_t a = j.begin("a", json::object(), 1);
  j.append(a, 0, 42);
  // Nobody calls sync(): the token reaches the file, and the count of fsyncs (the begin's and
  // the interval's) follows right after the write.
  std::vector<int32_t> got;
  for (int i = 0; i < 500 && (got.empty() || j.stats().syncs < 2); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    auto scan = scan_journal(read_bytes(fs::path(j.path())));
    if (!scan.entries.empty()) got = scan.entries[0].tokens[0];
  }
  EXPECT_EQ(got, std::vector<int32_t>{42});
  EXPECT_EQ(j.stats().syncs, 2);
}

// A journal's bytes and the offsets where its records end.
struct Sample {
  std::vector<uint8_t> bytes;
  std::vector<int64_t> ends;
  Sample() {
    bytes.assign(kJournalMagic, kJournalMagic + sizeof kJournalMagic);
    ends.push_back(int64_t(bytes.size()));
    auto add = [&](const std::vector<uint8_t>& r) {
      bytes.insert(bytes.end(), r.begin(), r.end());
      ends.push_back(int64_t(bytes.size()));
    };
    JournalEntry a{1, "req-a", {{"stream", false}}, {{}, {}}, false};
    JournalEntry b{2, "req-b", {{"stream", true}}, {{}}, false};
    add(begin_record(a));
    add(tokens_record(1, 0, std::vector<int32_t>{5, 6, 7}));
    add(begin_record(b));
    add(tokens_record(1, 1, std::vector<int32_t>{70000}));
    add(tokens_record(2, 0, std::vector<int32_t>{1, 2}));
    add(end_record(1));
    add(tokens_record(2, 0, std::vector<int32_t>{3}));
  }
};

// What the first `records` records of Sample say.
std::vector<JournalEntry> expected(size_t records) {
  std::vector<JournalEntry> e;
  if (records >= 1) e.push_back({1, "req-a", {{"stream", false}}, {{}, {}}, false});
  if (records >= 2) e[0].tokens[0] = {5, 6, 7};
  if (records >= 3) e.push_back({2, "req-b", {{"stream", true}}, {{}}, false});
  if (records >= 4) e[0].tokens[1] = {70000};
  if (records >= 5) e[1].tokens[0] = {1, 2};
  if (records >= 6) e[0].ended = true;
  if (records >= 7) e[1].tokens[0].push_back(3);
  return e;
}

void expect_entries(const std::vector<JournalEntry>& got, const std::vector<JournalEntry>& want, const std::string& where) {
  ASSERT_EQ(got.size(), want.size()) << where;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].seq, want[i].seq) << where;
    EXPECT_EQ(got[i].key, want[i].key) << where;
    EXPECT_EQ(got[i].meta, want[i].meta) << where;
    EXPECT_EQ(got[i].tokens, want[i].tokens) << where;
    EXPECT_EQ(got[i].ended, want[i].ended) << where;
  }
}

TEST(Journal, ACutAtEveryByteReadsBackItsWholeRecords) {
  const Sample s;
  for (size_t len = 0; len <= s.bytes.size(); ++len) {
    const auto scan = scan_journal(std::span(s.bytes).first(len));
    size_t whole = 0;  // records entirely inside the cut
    while (whole + 1 < s.ends.size() && s.ends[whole + 1] <= int64_t(len)) ++whole;
    const int64_t good = int64_t(len) < s.ends[0] ? 0 : s.ends[whole];
    const std::string where = "cut at " + std::to_string(len);
    EXPECT_EQ(scan.good_bytes, good) << where;
    EXPECT_EQ(scan.bad_bytes, int64_t(len) - good) << where;
    EXPECT_EQ(scan.problem.empty(), scan.bad_bytes == 0 || len == 0) << where << ": " << scan.problem;
    expect_entries(scan.entries, expected(int64_t(len) < s.ends[0] ? 0 : whole), where);
  }
}

TEST(Journal, AnyFlippedBitEndsTheJournalAtItsRecord) {
  const Sample s;
  for (size_t at = 0; at < s.bytes.size(); ++at)
    for (int bit : {0, 3, 7}) {
      auto bytes = s.bytes;
      bytes[at] ^= uint8_t(1u << bit);
      const auto scan = scan_journal(bytes);
      size_t rec = 0;  // the record holding byte `at` (0: the magic)
      while (s.ends[rec] <= int64_t(at)) ++rec;
      const std::string where = "bit " + std::to_string(bit) + " of byte " + std::to_string(at);
      EXPECT_EQ(scan.good_bytes, rec == 0 ? 0 : s.ends[rec - 1]) << where;
      EXPECT_FALSE(scan.problem.empty()) << where;
      expect_entries(scan.entries, expected(rec == 0 ? 0 : rec - 1), where);
    }
}

TEST(Journal, ReopeningTruncatesABadTailAndGoesOn) {
  TempDir t("tail");
  const Sample s;
  fs::create_directories(t.dir);
  const fs::path file = t.dir / "requests.journal";
  // A torn last record, then garbage where a record should be.
  for (const auto& tail : {std::vector<uint8_t>(s.bytes.begin(), s.bytes.end() - 3),
                           [&] {
                             auto b = s.bytes;
                             for (int i = 0; i < 40; ++i) b.push_back(uint8_t(0xA5 ^ i));
                             return b;
                           }()}) {
    write_bytes(file, tail);
    {
      Journal j(options(t));
      EXPECT_GT(j.recovery().bad_bytes, 0);
      EXPECT_FALSE(j.recovery().problem.empty());
      ASSERT_EQ(j.recovery().entries.size(), 2u);
      j.append(j.recovery().entries[1].seq, 0, 9);
    }
    Journal j(options(t));
    EXPECT_EQ(j.recovery().bad_bytes, 0) << j.recovery().problem;
    ASSERT_EQ(j.recovery().entries.size(), 2u);
    EXPECT_EQ(j.recovery().entries[1].tokens[0].back(), 9);
  }
  write_bytes(file, std::vector<uint8_t>{'n', 'o', 't'});
  Journal j(options(t));
  EXPECT_TRUE(j.recovery().entries.empty());
  EXPECT_EQ(j.recovery().problem, "no journal header");
}

TEST(Journal, FinishedRequestsAreCompactedAfterTheirRetention) {
  TempDir t("compact");
  JournalOptions o = options(t);
  o.retain = std::chrono::seconds(0);
  o.compact_bytes = 4096;
  {
    Journal j(o);
    const uint64_t open = j.begin("open", json::object(), 1);
    for (int i = 0; i < 200; ++i) {
      const uint64_t q = j.begin("done-" + std::to_string(i), {{"pad", std::string(100, 'x')}}, 1);
      j.append(q, 0, i);
      j.append(open, 0, i);
      j.end(q);
      if (i % 10 == 0) j.sync();
    }
    j.sync();
    EXPECT_GT(j.stats().compactions, 1);  // while serving, not only at the start
    EXPECT_LT(int64_t(fs::file_size(j.path())), 2 * o.compact_bytes);
  }
  {
    // The file still holds the requests finished since the last compaction; opening drops them.
    Journal j(o);
    const auto& es = j.recovery().entries;
    const auto open = std::find_if(es.begin(), es.end(), [](const JournalEntry& e) { return !e.ended; });
    ASSERT_NE(open, es.end());
    EXPECT_EQ(open->key, "open");
    EXPECT_EQ(open->tokens[0].size(), 200u);
    EXPECT_EQ(std::count_if(es.begin(), es.end(), [](const JournalEntry& e) { return !e.ended; }), 1);
    EXPECT_LT(fs::file_size(j.path()), 2048u);
  }
  Journal j(o);
  ASSERT_EQ(j.recovery().entries.size(), 1u);
  EXPECT_EQ(j.recovery().entries[0].key, "open");
}

}  // namespace
}  // namespace strata::server
