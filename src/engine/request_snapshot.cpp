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
// 2: cache entries in their storage formats (entry_codec.h) instead of fp32.
constexpr int kVersion = 2;

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

json codec(const dsv4::EntryCodec& c) { return {{"kind", int(c.kind)}, {"head_dim", c.head_dim}, {"rope_dim", c.rope_dim}}; }

dsv4::EntryCodec codec(const json& j) {
  const int kind = j.at("kind").get<int>();
  if (kind < 0 || kind > int(dsv4::EntryCodec::Kind::index_fp4)) throw Error("request snapshot: unknown entry format");
  return {dsv4::EntryCodec::Kind(kind), j.at("head_dim").get<int64_t>(), j.at("rope_dim").get<int64_t>()};
}

json compressor(const dsv4::CompressorState& c) {
  return {{"ratio", c.ratio}, {"head_dim", c.head_dim}, {"overlap", c.overlap}, {"codec", codec(c.codec)},
          {"kv", floats(c.kv.to_vector())}, {"score", floats(c.score.to_vector())}, {"entries", json::binary(c.entries.to_bytes())}};
}

dsv4::CompressorState compressor(const json& j) {
  dsv4::CompressorState c;
  c.ratio = j.at("ratio").get<int64_t>();
  c.head_dim = j.at("head_dim").get<int64_t>();
  c.overlap = j.at("overlap").get<bool>();
  c.codec = codec(j.at("codec"));
  c.kv = floats(j.at("kv"));
  c.score = floats(j.at("score"));
  c.entries.init(c.codec.bytes());
  c.entries.assign_bytes(j.at("entries").get_binary());
  return c;
}

json layer(const dsv4::LayerState& l) {
  return {{"window", l.window}, {"head_dim", l.head_dim}, {"codec", codec(l.codec)}, {"ring", json::binary(l.ring.to_vector())},
          {"compressor", compressor(l.compressor)}, {"index_keys", compressor(l.index_keys)}};
}

dsv4::LayerState layer(const json& j) {
  dsv4::LayerState l;
  l.window = j.at("window").get<int64_t>();
  l.head_dim = j.at("head_dim").get<int64_t>();
  l.codec = codec(j.at("codec"));
  l.ring = j.at("ring").get_binary();
  l.compressor = compressor(j.at("compressor"));
  l.index_keys = compressor(j.at("index_keys"));
  return l;
}

}  // namespace

void write_snapshot(const std::string& path, const RequestSnapshot& s) {
  json layers = json::array(), mtp = json::array();
  for (const auto& l : s.state.layers) layers.push_back(layer(l));
  for (const auto& l : s.state.mtp) mtp.push_back(layer(l));
  json j = {{"version", kVersion},
            {"id", s.id},
            {"tokens", s.tokens},
            {"prompt_tokens", s.prompt_tokens},
            {"cached_prompt_tokens", s.cached_prompt_tokens},
            {"has_state", s.has_state},
            {"pos", s.state.pos},
            {"layers", layers},
            {"mtp", mtp},
            {"mtp_pos", s.state.mtp_pos},
            {"mtp_hidden", floats(s.state.mtp_hidden)},
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
    s.state.pos = j.at("pos").get<int64_t>();
    for (const auto& l : j.at("layers")) s.state.layers.push_back(layer(l));
    for (const auto& l : j.at("mtp")) s.state.mtp.push_back(layer(l));
    s.state.mtp_pos = j.at("mtp_pos").get<std::vector<int64_t>>();
    s.state.mtp_hidden = floats(j.at("mtp_hidden"));
    s.sampler = j.at("sampler").get_binary();
    s.stops = j.at("stops").get_binary();
    if (s.prompt_tokens < 1 || s.prompt_tokens > int64_t(s.tokens.size()) || s.state.pos > int64_t(s.tokens.size()))
      throw Error(path + ": inconsistent request snapshot");
    return s;
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": corrupt request snapshot (" + std::string(e.what()) + ")");
  }
}

}  // namespace strata::engine
