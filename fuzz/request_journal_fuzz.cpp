// Request journals (`strata serve --journal DIR`, server/journal_file.h): the file a restart
// reads after a crash, torn, cut or damaged anywhere. Reading never throws; the good prefix
// and the bad tail add up to the file; the good prefix read alone gives the same requests and
// no bad tail (what the journal keeps after truncating is a journal); tokens are ids >= 0.
// Input: the file.
// With STRATA_FUZZ_WRITE_SEEDS=DIR set, initialization writes journals of a few requests
// (begun, with tokens, ended, several streams) into DIR: the seed corpus.
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "fuzz_input.h"
#include "server/journal_file.h"

namespace {
using namespace strata::server;

std::vector<uint8_t> journal(int requests) {
  std::vector<uint8_t> out(kJournalMagic, kJournalMagic + sizeof kJournalMagic);
  auto add = [&](const std::vector<uint8_t>& r) { out.insert(out.end(), r.begin(), r.end()); };
  for (int i = 1; i <= requests; ++i) {
    JournalEntry e{uint64_t(i), "chatcmpl-" + std::to_string(i), {{"body", "{\"max_tokens\":4}"}, {"created", 7}},
                   std::vector<std::vector<int32_t>>(size_t(i)), false};
    add(begin_record(e));
    add(tokens_record(uint64_t(i), 0, std::vector<int32_t>{1, 2, 70000}));
    if (i > 1) add(tokens_record(uint64_t(i), size_t(i - 1), std::vector<int32_t>{3}));
    if (i % 2 == 0) add(end_record(uint64_t(i)));
  }
  return out;
}

bool same(const JournalEntry& a, const JournalEntry& b) {
  return a.seq == b.seq && a.key == b.key && a.meta == b.meta && a.tokens == b.tokens && a.ended == b.ended;
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("STRATA_FUZZ_WRITE_SEEDS"))
    for (int n : {0, 1, 3}) {
      const auto bytes = journal(n);
      std::ofstream(std::string(dir) + "/journal_" + std::to_string(n), std::ios::binary)
          .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  const JournalScan scan = scan_journal(bytes);
  FUZZ_CHECK(scan.good_bytes >= 0 && scan.bad_bytes >= 0 && scan.good_bytes + scan.bad_bytes == int64_t(size),
             std::to_string(scan.good_bytes) + " + " + std::to_string(scan.bad_bytes));
  FUZZ_CHECK(scan.bad_bytes == 0 || !scan.problem.empty(), "a bad tail without its reason");
  for (const auto& e : scan.entries)
    for (const auto& s : e.tokens)
      for (int32_t t : s) FUZZ_CHECK(t >= 0, std::to_string(t));
  const JournalScan again = scan_journal(bytes.first(size_t(scan.good_bytes)));
  FUZZ_CHECK(again.bad_bytes == 0 || scan.good_bytes == 0, again.problem);
  FUZZ_CHECK(again.entries.size() == scan.entries.size(), "the good prefix reads differently");
  for (size_t i = 0; i < scan.entries.size(); ++i)
    FUZZ_CHECK(same(again.entries[i], scan.entries[i]), scan.entries[i].key);
  return 0;
}
