#include "text/bpe.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <queue>

#include "core/error.h"
#include "text/byte_level.h"
#include "text/replace_all.h"
#include "text/utf8.h"

namespace strata {
namespace {

constexpr uint64_t kEmpty = ~uint64_t{0};
constexpr size_t kMaxCachedWord = 256;
// Bounded so lookups stay cheap; when full the cache starts over (common words return fast).
constexpr size_t kMaxCacheEntries = 1 << 16;

uint64_t pair_key(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

uint64_t mix(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  return k;
}

std::string str_field(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return {};
  if (!j[key].is_string()) throw Error(std::string("tokenizer.json: model.") + key + " is not a string");
  return j[key].get<std::string>();
}

}  // namespace

Bpe::Bpe(const nlohmann::json& model, const BpeSpelling& spelling) : byte_level_(spelling.byte_level) {
  if (!model.is_object()) throw Error("tokenizer.json: missing \"model\"");
  std::string type = model.value("type", std::string());
  if (type != "BPE") throw Error("tokenizer.json: model type \"" + type + "\" is not supported (only BPE)");
  if (!str_field(model, "continuing_subword_prefix").empty() || !str_field(model, "end_of_word_suffix").empty())
    throw Error("tokenizer.json: BPE continuing_subword_prefix / end_of_word_suffix are not supported");
  if (model.contains("dropout") && !model["dropout"].is_null())
    throw Error("tokenizer.json: BPE dropout is not supported");
  byte_fallback_ = model.value("byte_fallback", false);
  fuse_unk_ = model.value("fuse_unk", false);
  if (byte_fallback_ && byte_level_)
    throw Error("tokenizer.json: BPE byte_fallback needs a SentencePiece-style decoder (Replace, ByteFallback, Fuse)");
  if (!model.contains("vocab") || !model["vocab"].is_object()) throw Error("tokenizer.json: model has no \"vocab\"");
  if (!model.contains("merges") || !model["merges"].is_array()) throw Error("tokenizer.json: model has no \"merges\"");
  ignore_merges_ = model.value("ignore_merges", false);

  int32_t max_id = -1;
  for (const auto& [tok, id] : model["vocab"].items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
      throw Error("tokenizer.json: vocab id of \"" + tok + "\" is not a valid id");
    vocab_.emplace(tok, id.get<int32_t>());
    max_id = std::max(max_id, id.get<int32_t>());
  }
  id_bytes_.resize(static_cast<size_t>(max_id + 1));
  id_tokens_.resize(static_cast<size_t>(max_id + 1));
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    auto it = vocab_.find(byte_level_ ? byte_level_encode(std::string(1, static_cast<char>(b))) : std::string(name));
    byte_id_[b] = it == vocab_.end() ? -1 : it->second;
  }
  for (const auto& [tok, id] : vocab_) {
    id_tokens_[id] = tok;
    std::optional<std::string> raw;
    if (byte_level_) {
      raw = byte_level_decode(tok);
    } else {
      if (!tok.empty()) {  // a one-character token
        const Utf8Char c = utf8_next(tok, 0);
        if (c.valid && size_t(c.len) == tok.size()) char_id_.emplace(c.cp, id);
      }
      raw = replace_all(tok, spelling.marker, spelling.marker_text);
    }
    id_bytes_[id] = raw ? *raw : tok;
    if (ignore_merges_ && raw) bytes_to_id_.emplace(*raw, id);
  }
  if (!byte_level_)
    for (int b = 0; b < 256; ++b)
      if (byte_id_[b] >= 0) id_bytes_[size_t(byte_id_[b])] = std::string(1, static_cast<char>(b));
  std::string unk = str_field(model, "unk_token");
  if (!unk.empty()) {
    auto it = vocab_.find(unk);
    if (it == vocab_.end()) throw Error("tokenizer.json: unk_token \"" + unk + "\" is not in the vocab");
    unk_id_ = it->second;
  }

  const auto& merges = model["merges"];
  size_t cap = 16;
  while (cap < merges.size() * 2) cap <<= 1;
  merge_slots_.assign(cap, Slot{kEmpty, {0, 0}});
  merge_mask_ = cap - 1;
  auto lookup = [&](const std::string& t, size_t rank) {
    auto it = vocab_.find(t);
    if (it == vocab_.end())
      throw Error("tokenizer.json: merge " + std::to_string(rank) + " uses \"" + t + "\", which is not in the vocab");
    return it->second;
  };
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& m = merges[rank];
    std::string a, b;
    if (m.is_string()) {  // older format: "a b"
      const std::string& s = m.get_ref<const std::string&>();
      size_t sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
        throw Error("tokenizer.json: merge " + std::to_string(rank) + " is not two tokens: \"" + s + "\"");
      a = s.substr(0, sp);
      b = s.substr(sp + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      a = m[0].get<std::string>();
      b = m[1].get<std::string>();
    } else {
      throw Error("tokenizer.json: merge " + std::to_string(rank) + " is not a pair of tokens");
    }
    int32_t ia = lookup(a, rank), ib = lookup(b, rank), ic = lookup(a + b, rank);
    uint64_t key = pair_key(ia, ib);
    for (uint64_t h = mix(key) & merge_mask_;; h = (h + 1) & merge_mask_) {
      if (merge_slots_[h].key == kEmpty) {
        merge_slots_[h] = {key, {static_cast<int32_t>(rank), ic}};
        break;
      }
      if (merge_slots_[h].key == key) break;  // a repeated merge keeps its first (lowest) rank
    }
  }
}

const Bpe::Merge* Bpe::find_merge(int32_t a, int32_t b) const {
  uint64_t key = pair_key(a, b);
  for (uint64_t h = mix(key) & merge_mask_;; h = (h + 1) & merge_mask_) {
    if (merge_slots_[h].key == key) return &merge_slots_[h].merge;
    if (merge_slots_[h].key == kEmpty) return nullptr;
  }
}

void Bpe::merge_word(std::string_view bytes, std::vector<int32_t>& out) const {
  // Symbols form a linked list over the word; candidate merges sit in a min-heap ordered by
  // (rank, position) and are checked for staleness when popped.
  struct Sym { int32_t id; int32_t prev, next; };
  struct Cand {
    int32_t rank, pos, left, right, merged;
    bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  thread_local std::vector<Sym> syms;
  thread_local std::vector<Cand> heap;
  thread_local std::vector<int32_t> start;
  syms.clear();
  heap.clear();
  start.clear();
  if (byte_level_) {
    for (unsigned char c : bytes) {
      int32_t id = byte_id_[c];
      if (id < 0) {
        // A byte the vocab lacks: the unknown token if there is one, else dropped (as the
        // Hugging Face implementation does).
        if (!unk_id_) continue;
        id = *unk_id_;
      }
      start.push_back(id);
    }
  } else {
    char_symbols(bytes, start);
  }
  for (int32_t id : start) {
    int32_t n = static_cast<int32_t>(syms.size());
    syms.push_back({id, n - 1, -1});
    if (n > 0) syms[n - 1].next = n;
  }
  auto push = [&](int32_t pos) {
    int32_t nx = syms[pos].next;
    if (nx < 0) return;
    if (const Merge* m = find_merge(syms[pos].id, syms[nx].id)) {
      heap.push_back({m->rank, pos, syms[pos].id, syms[nx].id, m->id});
      std::push_heap(heap.begin(), heap.end(), std::greater<>());
    }
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(syms.size()); ++i) push(i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    Cand c = heap.back();
    heap.pop_back();
    Sym& s = syms[c.pos];
    if (s.id != c.left || s.next < 0 || syms[s.next].id != c.right) continue;  // stale
    int32_t gone = s.next;
    s.id = c.merged;
    s.next = syms[gone].next;
    if (s.next >= 0) syms[s.next].prev = c.pos;
    syms[gone].id = -1;  // unlinked
    if (s.prev >= 0) push(s.prev);
    push(c.pos);
  }
  for (int32_t i = syms.empty() ? -1 : 0; i >= 0; i = syms[i].next) out.push_back(syms[i].id);
}

void Bpe::char_symbols(std::string_view text, std::vector<int32_t>& ids) const {
  bool last_unk = false;
  for (size_t i = 0; i < text.size();) {
    const Utf8Char c = utf8_next(text, i);  // the text is valid UTF-8
    const std::string_view ch = text.substr(i, size_t(c.len));
    i += size_t(c.len);
    if (auto it = char_id_.find(c.cp); it != char_id_.end()) {
      ids.push_back(it->second);
      last_unk = false;
      continue;
    }
    if (byte_fallback_ && std::all_of(ch.begin(), ch.end(), [&](char b) { return byte_id_[static_cast<unsigned char>(b)] >= 0; })) {
      for (char b : ch) ids.push_back(byte_id_[static_cast<unsigned char>(b)]);
      last_unk = false;
      continue;
    }
    // Unknown: the unk token (consecutive ones fused when fuse_unk), or dropped without one.
    if (!unk_id_) continue;
    if (!(fuse_unk_ && last_unk)) ids.push_back(*unk_id_);
    last_unk = true;
  }
}

void Bpe::encode_word(std::string_view bytes, std::vector<int32_t>& out) const {
  if (bytes.empty()) return;
  if (ignore_merges_) {
    auto it = bytes_to_id_.find(std::string(bytes));
    if (it != bytes_to_id_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  if (byte_level_ && bytes.size() == 1 && byte_id_[static_cast<unsigned char>(bytes[0])] >= 0) {
    out.push_back(byte_id_[static_cast<unsigned char>(bytes[0])]);
    return;
  }
  bool cacheable = bytes.size() <= kMaxCachedWord;
  if (cacheable) {
    std::lock_guard lock(cache_mu_);
    auto it = cache_.find(bytes);
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  size_t start = out.size();
  merge_word(bytes, out);
  if (cacheable) {
    std::lock_guard lock(cache_mu_);
    if (cache_.size() >= kMaxCacheEntries) cache_.clear();
    cache_.emplace(std::string(bytes), std::vector<int32_t>(out.begin() + start, out.end()));
  }
}

}  // namespace strata
