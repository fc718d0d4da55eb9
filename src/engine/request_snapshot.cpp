#include "engine/request_snapshot.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace strata::engine {

namespace {

using json = nlohmann::json;
constexpr char kMagic[8] = {'S', 'T', 'R', 'A', 'T', 'A', 'R', 'Q'};
// 3: caches as records of the model's cache specs (any architecture).
constexpr int kVersion = 3;

json floats(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(float));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return json::binary(std::move(b));
}

std::vector<float> floats(const json& j) {
  const auto& b = j.get_binary();
  if (b.size() % sizeof(float)) throw Error("request snapshot: a float array has a partial element");
  std::vector<float> v(b.size() / sizeof(float));
  if (!b.empty()) std::memcpy(v.data(), b.data(), b.size());
  return v;
}

json records(const std::vector<cache::CacheRecord>& rs) {
  json out = json::array();
  for (const auto& r : rs)
    out.push_back({{"kind", r.kind}, {"layer", r.layer}, {"format", r.format}, {"entries", r.entries},
                   {"bytes", json::binary(r.bytes)}});
  return out;
}

std::vector<cache::CacheRecord> records(const json& j) {
  std::vector<cache::CacheRecord> out;
  for (const auto& r : j)
    out.push_back({r.at("kind").get<std::string>(), r.at("layer").get<int64_t>(), r.at("format").get<std::string>(),
                   r.at("entries").get<int64_t>(), r.at("bytes").get_binary()});
  return out;
}

}  // namespace

void write_snapshot(const std::string& path, const RequestSnapshot& s) {
  json j = {{"version", kVersion},
            {"model_type", s.model_type},
            {"id", s.id},
            {"tokens", s.tokens},
            {"prompt_tokens", s.prompt_tokens},
            {"cached_prompt_tokens", s.cached_prompt_tokens},
            {"has_state", s.has_state},
            {"pos", s.pos},
            {"mtp_pos", s.mtp_pos},
            {"mtp_hidden", floats(s.mtp_hidden)},
            {"caches", records(s.caches)},
            {"sampler", json::binary(s.sampler)},
            {"stops", json::binary(s.stops)}};
  std::vector<uint8_t> body = json::to_cbor(j);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw Error("cannot write request snapshot " + path);
  f.write(kMagic, sizeof kMagic);
  f.write(reinterpret_cast<const char*>(body.data()), std::streamsize(body.size()));
  if (!f) throw Error("cannot write request snapshot " + path);
}

RequestSnapshot read_snapshot(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot read request snapshot " + path);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (bytes.size() < sizeof kMagic || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    throw Error(path + " is not a strata request snapshot");
  try {
    json j = json::from_cbor(bytes.begin() + sizeof kMagic, bytes.end());
    if (j.at("version").get<int>() != kVersion) throw Error(path + ": unsupported request snapshot version");
    RequestSnapshot s;
    s.id = j.at("id").get<uint64_t>();
    s.tokens = j.at("tokens").get<std::vector<int32_t>>();
    s.prompt_tokens = j.at("prompt_tokens").get<int64_t>();
    s.cached_prompt_tokens = j.at("cached_prompt_tokens").get<int64_t>();
    s.has_state = j.at("has_state").get<bool>();
    s.model_type = j.at("model_type").get<std::string>();
    s.pos = j.at("pos").get<int64_t>();
    s.mtp_pos = j.at("mtp_pos").get<std::vector<int64_t>>();
    s.mtp_hidden = floats(j.at("mtp_hidden"));
    s.caches = records(j.at("caches"));
    s.sampler = j.at("sampler").get_binary();
    s.stops = j.at("stops").get_binary();
    if (s.prompt_tokens < 1 || s.prompt_tokens > int64_t(s.tokens.size()) || s.pos < 0 || s.pos > int64_t(s.tokens.size()))
      throw Error(path + ": inconsistent request snapshot");
    return s;
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": corrupt request snapshot (" + std::string(e.what()) + ")");
  }
}

}  // namespace strata::engine
