#include "server/journal_file.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>

namespace strata::server {

namespace {

using json = nlohmann::json;

void put32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(uint8_t(v >> (8 * i)));
}

uint32_t get32(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24; }

bool is_uint(const json& j, const char* k) { return j.contains(k) && j[k].is_number_unsigned(); }

}  // namespace

uint32_t crc32(std::span<const uint8_t> bytes) {
  // zlib's CRC-32 (the IEEE polynomial, as gzip and PNG use): the records' CRC field
  uLong c = ::crc32(0L, Z_NULL, 0);
  for (size_t at = 0; at < bytes.size();) {  // zlib takes a uInt length
    const size_t n = std::min<size_t>(bytes.size() - at, size_t(1) << 30);
    c = ::crc32(c, bytes.data() + at, uInt(n));
    at += n;
  }
  return uint32_t(c);
}

std::vector<uint8_t> journal_record(const json& payload) {
  const std::vector<uint8_t> body = json::to_cbor(payload);
  std::vector<uint8_t> out;
  out.reserve(body.size() + 8);
  put32(out, uint32_t(body.size()));
  put32(out, crc32(body));
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

std::vector<uint8_t> begin_record(const JournalEntry& e) {
  return journal_record({{"n", e.seq}, {"key", e.key}, {"meta", e.meta}, {"streams", e.tokens.size()}});
}

std::vector<uint8_t> tokens_record(uint64_t seq, size_t stream, std::span<const int32_t> tokens) {
  return journal_record({{"n", seq}, {"s", stream}, {"t", std::vector<int32_t>(tokens.begin(), tokens.end())}});
}

std::vector<uint8_t> end_record(uint64_t seq, bool cancelled) {
  return journal_record(cancelled ? json{{"n", seq}, {"e", true}, {"c", true}} : json{{"n", seq}, {"e", true}});
}

JournalScan scan_journal(std::span<const uint8_t> bytes) {
  JournalScan out;
  const int64_t size = int64_t(bytes.size());
  auto bad = [&](int64_t at, std::string why) {
    out.good_bytes = at;
    out.bad_bytes = size - at;
    out.problem = std::move(why);
    return out;
  };
  if (size < int64_t(sizeof kJournalMagic) || std::memcmp(bytes.data(), kJournalMagic, sizeof kJournalMagic) != 0)
    return bad(0, size == 0 ? "" : "no journal header");
  std::map<uint64_t, size_t> index;  // seq -> entries[i]
  int64_t at = sizeof kJournalMagic;
  while (at < size) {
    if (size - at < 8) return bad(at, "a torn record header");
    const uint32_t len = get32(bytes.data() + at), crc = get32(bytes.data() + at + 4);
    if (len > kJournalMaxRecord) return bad(at, "a record length of " + std::to_string(len) + " bytes");
    if (size - at - 8 < int64_t(len)) return bad(at, "a torn record");
    const auto body = bytes.subspan(size_t(at + 8), len);
    if (crc32(body) != crc) return bad(at, "a record failing its CRC");
    json j;
    try {
      j = json::from_cbor(body.begin(), body.end());
    } catch (const json::exception&) {
      return bad(at, "a record that is not CBOR");
    }
    if (!j.is_object() || !is_uint(j, "n")) return bad(at, "a record without a request number");
    const uint64_t n = j["n"].get<uint64_t>();
    if (j.contains("key")) {
      if (!j["key"].is_string() || !j.contains("meta") || !is_uint(j, "streams") || index.count(n) ||
          j["streams"].get<uint64_t>() > 4096)
        return bad(at, "a malformed begin record");
      JournalEntry e;
      e.seq = n;
      e.key = j["key"].get<std::string>();
      e.meta = std::move(j["meta"]);
      e.tokens.resize(j["streams"].get<size_t>());
      index[n] = out.entries.size();
      out.entries.push_back(std::move(e));
    } else {
      auto it = index.find(n);
      if (it == index.end()) return bad(at, "a record for request " + std::to_string(n) + ", never begun");
      JournalEntry& e = out.entries[it->second];
      if (j.contains("e")) {
        if (j.contains("c") && !j["c"].is_boolean()) return bad(at, "a malformed end record");
        e.ended = true;
        e.cancelled = j.value("c", false);
      } else {
        if (!is_uint(j, "s") || j["s"].get<uint64_t>() >= e.tokens.size() || !j.contains("t") || !j["t"].is_array())
          return bad(at, "a malformed tokens record");
        std::vector<int32_t> ts;  // whole or not at all
        for (const auto& t : j["t"]) {
          if (!t.is_number_integer()) return bad(at, "a malformed tokens record");
          const int64_t v = t.get<int64_t>();
          if (v < 0 || v > INT32_MAX) return bad(at, "a malformed tokens record");
          ts.push_back(int32_t(v));
        }
        auto& dst = e.tokens[j["s"].get<size_t>()];
        dst.insert(dst.end(), ts.begin(), ts.end());
      }
    }
    at += 8 + int64_t(len);
  }
  out.good_bytes = at;
  return out;
}

}  // namespace strata::server
