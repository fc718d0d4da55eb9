// The request journal's on-disk format (strata serve --journal): the 8 bytes "STRATAJL", then
// records, each a 4-byte little-endian payload length, the payload's CRC-32 (little-endian)
// and the payload, one CBOR document:
//   begin  {"n": seq, "key": caller's id, "meta": caller's JSON, "streams": count}
//   tokens {"n": seq, "s": stream, "t": [token ids]}   (appended to that stream, in order)
//   end    {"n": seq, "e": true} or, cancelled by its client, {"n": seq, "e": true, "c": true}
// Records are only ever appended; a crash can leave a torn last record, and a damaged disk a
// corrupt one. Reading stops at the first record that is incomplete, fails its CRC, is not
// CBOR of one of the shapes above, or names a request it has not begun: everything from there
// on is reported as the bad tail (the journal truncates it), never returned.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace strata::server {

// One request as the journal has it.
struct JournalEntry {
  uint64_t seq = 0;
  std::string key;
  nlohmann::json meta;
  std::vector<std::vector<int32_t>> tokens;  // per stream, in order
  bool ended = false;
  bool cancelled = false;  // ended by its client's cancellation
};

struct JournalScan {
  std::vector<JournalEntry> entries;  // in begin order
  int64_t good_bytes = 0;             // the prefix made of whole, valid records (and the magic)
  int64_t bad_bytes = 0;              // the rest of the file: a torn or corrupt tail
  std::string problem;                // why the tail is bad (empty when there is none)
};

inline constexpr char kJournalMagic[8] = {'S', 'T', 'R', 'A', 'T', 'A', 'J', 'L'};
// A record larger than this is taken for a corrupt length (a begin holds a request body, which
// the server limits to --max-body-bytes; the tokenized prompt is a few times smaller).
inline constexpr uint32_t kJournalMaxRecord = 256u << 20;

uint32_t crc32(std::span<const uint8_t> bytes);

// One framed record (length, CRC, CBOR payload), ready to append.
std::vector<uint8_t> journal_record(const nlohmann::json& payload);
std::vector<uint8_t> begin_record(const JournalEntry& e);
std::vector<uint8_t> tokens_record(uint64_t seq, size_t stream, std::span<const int32_t> tokens);
std::vector<uint8_t> end_record(uint64_t seq, bool cancelled = false);

// Parses a journal's bytes; never throws for bad content. An empty file (or one holding a
// torn magic) is an empty journal with a bad tail of its bytes.
JournalScan scan_journal(std::span<const uint8_t> bytes);

}  // namespace strata::server
