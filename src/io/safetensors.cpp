#include "io/safetensors.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace strata {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {
// Largest header we accept: real checkpoints have a few MB at most (tens of thousands of
// tensors); anything larger is a corrupt length field.
constexpr uint64_t kMaxHeader = 256ull << 20;

uint64_t read_u64_le(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Parses JSON and rejects duplicate keys at the top level (nlohmann would keep the last).
json parse_header(const std::string& path, const char* begin, const char* end) {
  std::set<std::string> seen;
  std::string dup;
  json::parser_callback_t cb = [&](int depth, json::parse_event_t ev, json& parsed) {
    if (depth == 1 && ev == json::parse_event_t::key && dup.empty()) {
      const std::string& k = parsed.get_ref<const std::string&>();
      if (!seen.insert(k).second) dup = k;
    }
    return true;
  };
  json j;
  try {
    j = json::parse(begin, end, cb);
  } catch (const json::exception& e) {
    throw Error(path + ": header is not valid JSON: " + e.what());
  }
  if (!dup.empty()) throw Error(path + ": tensor '" + dup + "' appears twice in the header");
  if (!j.is_object()) throw Error(path + ": header is not a JSON object");
  return j;
}
}  // namespace

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string TensorInfo::shape_str() const {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

SafetensorsHeader parse_safetensors(const uint8_t* bytes, uint64_t fsize, const std::string& path, int shard_index) {
  SafetensorsHeader h;
  if (fsize < 8) throw Error(path + ": truncated: " + std::to_string(fsize) + " bytes, no header length");
  const uint64_t hlen = read_u64_le(bytes);
  if (hlen < 2 || hlen > kMaxHeader || hlen > fsize - 8)
    throw Error(path + ": header length " + std::to_string(hlen) + " is impossible for a file of " +
                std::to_string(fsize) + " bytes (truncated or not safetensors)");
  const char* hb = reinterpret_cast<const char*>(bytes + 8);
  json j = parse_header(path, hb, hb + hlen);
  const uint64_t data_start = 8 + hlen;
  const uint64_t data_size = fsize - data_start;
  for (auto& [name, v] : j.items()) {
    if (name == "__metadata__") {
      if (!v.is_object()) throw Error(path + ": __metadata__ is not an object");
      for (auto& [k, mv] : v.items()) {
        if (!mv.is_string()) throw Error(path + ": __metadata__ value for '" + k + "' is not a string");
        h.metadata[k] = mv.get<std::string>();
      }
      continue;
    }
    const std::string where = path + ": tensor '" + name + "'";
    if (!v.is_object()) throw Error(where + ": entry is not an object");
    if (!v.contains("dtype") || !v["dtype"].is_string()) throw Error(where + ": missing dtype");
    if (!v.contains("shape") || !v["shape"].is_array()) throw Error(where + ": missing shape");
    if (!v.contains("data_offsets") || !v["data_offsets"].is_array() || v["data_offsets"].size() != 2)
      throw Error(where + ": data_offsets must be [begin, end]");
    TensorInfo t;
    t.name = name;
    t.shard = shard_index;
    auto dt = parse_dtype(v["dtype"].get<std::string>());
    if (!dt) throw Error(where + ": unsupported dtype " + v["dtype"].get<std::string>());
    t.dtype = *dt;
    unsigned __int128 numel = 1;
    for (auto& d : v["shape"]) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0) throw Error(where + ": shape has a bad dimension");
      t.shape.push_back(d.get<int64_t>());
      numel *= uint64_t(t.shape.back());
      if (numel > (unsigned __int128)(1) << 62) throw Error(where + ": shape is absurdly large");
    }
    auto& off = v["data_offsets"];
    if (!off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      throw Error(where + ": data_offsets must be non-negative integers");
    uint64_t b = off[0].get<uint64_t>(), e = off[1].get<uint64_t>();
    if (b > e) throw Error(where + ": data_offsets end before they begin");
    if (e > data_size)
      throw Error(where + ": data ends at byte " + std::to_string(e) + " but the file has only " +
                  std::to_string(data_size) + " data bytes (truncated?)");
    const unsigned __int128 want = numel * unsigned(dtype_size(t.dtype));
    if ((unsigned __int128)(e - b) != want)
      throw Error(where + ": " + std::to_string(e - b) + " bytes for shape " + t.shape_str() + " " +
                  std::string(dtype_name(t.dtype)) + " (expected " + std::to_string(uint64_t(want)) + ")");
    t.offset = data_start + b;
    t.nbytes = e - b;
    h.tensors.push_back(std::move(t));
  }
  // No two tensors may share bytes.
  std::vector<const TensorInfo*> order;
  for (auto& t : h.tensors) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < order.size(); ++i) {
    const TensorInfo* p = order[i - 1];
    if (p->nbytes && order[i]->nbytes && order[i]->offset < p->offset + p->nbytes)
      throw Error(path + ": tensors '" + p->name + "' and '" + order[i]->name + "' overlap");
  }
  return h;
}

SafetensorsFile::SafetensorsFile(const std::string& path, int shard_index) : file_(path) {
  SafetensorsHeader h = parse_safetensors(file_.data(), file_.size(), path, shard_index);
  tensors_ = std::move(h.tensors);
  metadata_ = std::move(h.metadata);
}

SafetensorsCheckpoint SafetensorsCheckpoint::open_file(const std::string& path) {
  SafetensorsCheckpoint c;
  c.files_.push_back(std::make_unique<SafetensorsFile>(path, 0));
  for (auto& t : c.files_[0]->tensors()) c.by_name_[t.name] = &t;
  return c;
}

SafetensorsCheckpoint SafetensorsCheckpoint::open_dir(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Error(dir + ": not a readable directory");
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  if (!fs::exists(index)) {
    const fs::path single = fs::path(dir) / "model.safetensors";
    if (fs::exists(single)) return open_file(single.string());
    throw Error(dir + ": no model.safetensors.index.json or model.safetensors");
  }
  MappedFile f(index.string());
  json j;
  try {
    j = json::parse(f.data(), f.data() + f.size());
  } catch (const json::exception& e) {
    throw Error(index.string() + ": not valid JSON: " + e.what());
  }
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    throw Error(index.string() + ": no weight_map object");
  // shard file -> tensors the index puts there
  std::map<std::string, std::vector<std::string>> by_shard;
  for (auto& [name, file] : j["weight_map"].items()) {
    if (!file.is_string()) throw Error(index.string() + ": weight_map entry for '" + name + "' is not a string");
    const std::string fn = file.get<std::string>();
    if (fn.find('/') != std::string::npos || fn == ".." || fn.empty())
      throw Error(index.string() + ": weight_map entry for '" + name + "' names a path outside the directory");
    by_shard[fn].push_back(name);
  }
  SafetensorsCheckpoint c;
  for (auto& [fn, names] : by_shard) {
    const fs::path p = fs::path(dir) / fn;
    if (!fs::exists(p)) throw Error(p.string() + ": shard listed in the index is missing (needed for '" + names[0] + "')");
    c.files_.push_back(std::make_unique<SafetensorsFile>(p.string(), int(c.files_.size())));
    const SafetensorsFile& sf = *c.files_.back();
    std::unordered_map<std::string, const TensorInfo*> here;
    for (auto& t : sf.tensors()) here[t.name] = &t;
    for (auto& n : names) {
      auto it = here.find(n);
      if (it == here.end()) throw Error(p.string() + ": tensor '" + n + "' is listed in the index but not in this shard");
      c.by_name_[n] = it->second;
    }
    for (auto& t : sf.tensors()) {
      auto it = c.by_name_.find(t.name);
      if (it == c.by_name_.end() || it->second != &t)
        throw Error(p.string() + ": tensor '" + t.name + "' is in this shard but the index does not place it here");
    }
  }
  return c;
}

const TensorInfo* SafetensorsCheckpoint::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

TensorRef SafetensorsCheckpoint::ref(const TensorInfo& info) const {
  return TensorRef{&info, files_[size_t(info.shard)]->mapped().data() + info.offset};
}

TensorRef SafetensorsCheckpoint::get(const std::string& name) const {
  const TensorInfo* t = find(name);
  if (!t) throw Error("checkpoint has no tensor '" + name + "'");
  return ref(*t);
}

std::vector<const TensorInfo*> SafetensorsCheckpoint::all() const {
  std::vector<const TensorInfo*> v;
  for (auto& [n, t] : by_name_) v.push_back(t);
  std::sort(v.begin(), v.end(), [](auto* a, auto* b) { return a->name < b->name; });
  return v;
}

uint64_t SafetensorsCheckpoint::total_bytes() const {
  uint64_t s = 0;
  for (auto& [n, t] : by_name_) s += t->nbytes;
  return s;
}

}  // namespace strata
