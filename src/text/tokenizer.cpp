#include "text/tokenizer.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "text/bpe.h"
#include "text/normalizer.h"
#include "text/pretokenizer.h"
#include "text/replace_all.h"
#include "text/utf8.h"

namespace strata {
namespace {

// The spelling the decoder undoes: ByteLevel (GPT-2's byte map), or the SentencePiece-style
// sequence Replace(marker -> text), ByteFallback, Fuse (Gemma). Other decoders are not
// implemented.
BpeSpelling decoder_spelling(const nlohmann::json& dec) {
  const std::string type = dec.is_object() ? dec.value("type", std::string()) : std::string();
  if (type == "ByteLevel") return {};
  const char* want = "tokenizer.json: unsupported decoder (ByteLevel, or the sequence Replace, ByteFallback, Fuse)";
  if (type != "Sequence" || !dec.contains("decoders") || !dec["decoders"].is_array()) throw Error(want);
  const auto& steps = dec["decoders"];
  if (steps.size() != 3 || steps[0].value("type", std::string()) != "Replace" ||
      steps[1].value("type", std::string()) != "ByteFallback" || steps[2].value("type", std::string()) != "Fuse")
    throw Error(want);
  const auto& pattern = steps[0].value("pattern", nlohmann::json());
  if (!pattern.is_object() || !pattern.contains("String") || !pattern["String"].is_string() ||
      !steps[0].contains("content") || !steps[0]["content"].is_string())
    throw Error("tokenizer.json: the decoder's Replace step needs a String pattern and a content");
  BpeSpelling s;
  s.byte_level = false;
  s.marker = pattern["String"].get<std::string>();
  s.marker_text = steps[0]["content"].get<std::string>();
  return s;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot open " + path);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool file_exists(const std::string& path) { return std::ifstream(path).good(); }

nlohmann::json parse(std::string_view text, const char* what) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string(what) + " is not valid JSON: " + e.what());
  }
}

// A token named in tokenizer_config.json: a string, null, or {"content": ...}.
std::optional<std::string> config_token(const nlohmann::json& cfg, const char* key) {
  if (!cfg.contains(key) || cfg[key].is_null()) return std::nullopt;
  const auto& v = cfg[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  throw Error(std::string("tokenizer_config.json: ") + key + " is neither a string nor a token object");
}

bool config_bool(const nlohmann::json& cfg, const char* key, bool dflt) {
  if (!cfg.contains(key) || cfg[key].is_null()) return dflt;
  if (!cfg[key].is_boolean()) throw Error(std::string("tokenizer_config.json: ") + key + " is not a boolean");
  return cfg[key].get<bool>();
}

bool flag(const nlohmann::json& t, const char* key, bool dflt) {
  return t.contains(key) && t[key].is_boolean() ? t[key].get<bool>() : dflt;
}

// transformers' clean_up_tokenization: drops the space English tokenizers leave before
// punctuation and contractions.
std::string clean_up_spaces(std::string s) {
  static const std::pair<const char*, const char*> kRules[] = {
      {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"},
      {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (auto [from, to] : kRules) {
    std::string out;
    std::string_view f(from);
    size_t pos = 0;
    for (size_t hit; (hit = s.find(f, pos)) != std::string::npos; pos = hit + f.size()) {
      out.append(s, pos, hit - pos);
      out += to;
    }
    out.append(s, pos);
    s.swap(out);
  }
  return s;
}

}  // namespace

Tokenizer::Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::load(const std::string& dir) {
  std::string tj = dir + "/tokenizer.json", cj = dir + "/tokenizer_config.json";
  if (!file_exists(tj)) throw Error("no tokenizer.json in " + dir);
  std::string config = file_exists(cj) ? read_file(cj) : std::string();
  try {
    return from_json(read_file(tj), config);
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + " (in " + dir + ")");
  }
}

Tokenizer Tokenizer::from_json(std::string_view tokenizer_json, std::string_view config_json) {
  nlohmann::json j = parse(tokenizer_json, "tokenizer.json");
  nlohmann::json cfg = config_json.empty() ? nlohmann::json::object() : parse(config_json, "tokenizer_config.json");
  if (!j.is_object()) throw Error("tokenizer.json is not a JSON object");
  if (!j.contains("model")) throw Error("tokenizer.json: missing \"model\"");

  Tokenizer t;
  const BpeSpelling spelling = decoder_spelling(j.value("decoder", nlohmann::json()));
  t.bpe_ = std::make_unique<Bpe>(j["model"], spelling);
  t.marker_ = spelling.marker;
  t.marker_text_ = spelling.marker_text;
  t.normalizer_ = Normalizer::from_json(j.value("normalizer", nlohmann::json()));
  if (!j.contains("pre_tokenizer")) throw Error("tokenizer.json: missing \"pre_tokenizer\"");
  t.pre_tokenizer_ = std::make_unique<PreTokenizer>(j["pre_tokenizer"], spelling.byte_level);

  int32_t max_id = static_cast<int32_t>(t.bpe_->id_bytes().size()) - 1;
  if (j.contains("added_tokens") && !j["added_tokens"].is_null()) {
    if (!j["added_tokens"].is_array()) throw Error("tokenizer.json: added_tokens is not an array");
    for (const auto& a : j["added_tokens"]) {
      if (!a.contains("id") || !a["id"].is_number_integer() || !a.contains("content") || !a["content"].is_string())
        throw Error("tokenizer.json: an added token lacks id or content");
      AddedToken tok;
      tok.id = a["id"].get<int32_t>();
      if (tok.id < 0) throw Error("tokenizer.json: added token id " + std::to_string(tok.id) + " is negative");
      tok.content = a["content"].get<std::string>();
      tok.special = flag(a, "special", false);
      tok.lstrip = flag(a, "lstrip", false);
      tok.rstrip = flag(a, "rstrip", false);
      tok.normalized = flag(a, "normalized", !tok.special);
      tok.single_word = flag(a, "single_word", false);
      max_id = std::max(max_id, tok.id);
      t.added_by_id_[tok.id] = t.added_.size();
      t.added_by_content_[tok.content] = tok.id;
      t.added_.push_back(std::move(tok));
    }
  }
  t.vocab_size_ = max_id + 1;
  t.special_.assign(static_cast<size_t>(t.vocab_size_), false);
  for (const auto& a : t.added_) if (a.special) t.special_[a.id] = true;

  // Non-normalized tokens are found in the raw text; normalized ones in normalized text, by
  // their normalized content.
  std::vector<const AddedToken*> raw, norm;
  std::vector<std::string> raw_c, norm_c;
  for (const auto& a : t.added_) {
    if (a.normalized && t.normalizer_) {
      norm.push_back(&a);
      norm_c.push_back(t.normalizer_->normalize(a.content));
    } else {
      raw.push_back(&a);
      raw_c.push_back(a.content);
    }
  }
  t.raw_matcher_ = AddedTokenMatcher(raw, raw_c);
  t.normalized_matcher_ = AddedTokenMatcher(norm, norm_c);

  auto id_of = [&](const std::string& s, const char* key) {
    auto id = t.token_to_id(s);
    if (!id) throw Error(std::string("tokenizer_config.json: ") + key + " \"" + s + "\" is not in the vocabulary");
    return *id;
  };
  if (auto s = config_token(cfg, "bos_token")) t.bos_id_ = id_of(*s, "bos_token");
  if (auto s = config_token(cfg, "eos_token")) t.eos_id_ = id_of(*s, "eos_token");
  t.add_bos_ = config_bool(cfg, "add_bos_token", false) && t.bos_id_ >= 0;
  t.add_eos_ = config_bool(cfg, "add_eos_token", false) && t.eos_id_ >= 0;
  // transformers' default when the config does not say.
  t.clean_up_spaces_ = config_bool(cfg, "clean_up_tokenization_spaces", true);
  if (cfg.contains("additional_special_tokens") && cfg["additional_special_tokens"].is_array()) {
    for (const auto& s : cfg["additional_special_tokens"]) {
      std::string c = s.is_string() ? s.get<std::string>()
                                    : (s.is_object() ? s.value("content", std::string()) : std::string());
      if (auto id = t.token_to_id(c)) t.special_[*id] = true;
    }
  }
  return t;
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  std::string key(token);
  if (auto it = added_by_content_.find(key); it != added_by_content_.end()) return it->second;
  if (auto it = bpe_->vocab().find(key); it != bpe_->vocab().end()) return it->second;
  return std::nullopt;
}

void Tokenizer::check_id(int32_t id) const {
  bool known = id >= 0 && (added_by_id_.count(id) ||
                           (static_cast<size_t>(id) < bpe_->id_bytes().size() && bpe_->id_bytes()[id]));
  if (!known)
    throw Error("token id " + std::to_string(id) + " is not in the vocabulary (size " + std::to_string(vocab_size_) + ")");
}

std::string Tokenizer::id_to_token(int32_t id) const {
  check_id(id);
  if (auto it = added_by_id_.find(id); it != added_by_id_.end()) return added_[it->second].content;
  return bpe_->id_tokens()[id];
}

bool Tokenizer::is_special(int32_t id) const {
  return id >= 0 && id < vocab_size_ && special_[id];
}

std::string Tokenizer::token_bytes(int32_t id, bool skip_special) const {
  check_id(id);
  if (skip_special && special_[id]) return {};
  if (auto it = added_by_id_.find(id); it != added_by_id_.end()) {
    const std::string& c = added_[it->second].content;
    return marker_.empty() ? c : replace_all(c, marker_, marker_text_);
  }
  return *bpe_->id_bytes()[id];
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::string bytes;
  bytes.reserve(ids.size() * 4);
  for (int32_t id : ids) bytes += token_bytes(id, skip_special);
  std::string text = utf8_sanitize(bytes);
  return clean_up_spaces_ ? clean_up_spaces(std::move(text)) : text;
}

void Tokenizer::encode_section(std::string_view text, std::vector<int32_t>& out) const {
  std::deque<std::string> arena;
  for (std::string_view piece : pre_tokenizer_->split(text, arena)) bpe_->encode_word(piece, out);
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  if (add_special && add_bos_) ids.push_back(bos_id_);
  std::string repaired;
  std::string_view clean = text;
  if (!utf8_valid(text)) clean = repaired = utf8_sanitize(text);
  std::vector<Segment> segs;
  raw_matcher_.split(clean, segs);
  std::vector<Segment> inner;
  for (const Segment& s : segs) {
    if (s.token >= 0) {
      ids.push_back(s.token);
      continue;
    }
    if (!normalizer_) {
      encode_section(s.text, ids);
      continue;
    }
    std::string norm = normalizer_->normalize(s.text);
    inner.clear();
    normalized_matcher_.split(norm, inner);
    for (const Segment& n : inner) {
      if (n.token >= 0) ids.push_back(n.token);
      else encode_section(n.text, ids);
    }
  }
  if (add_special && add_eos_) ids.push_back(eos_id_);
  return ids;
}

std::string Tokenizer::normalize(std::string_view text) const {
  std::string clean = utf8_sanitize(text);
  if (!normalizer_) return clean;
  std::vector<Segment> segs;
  raw_matcher_.split(clean, segs);
  std::string out;
  for (const Segment& s : segs) {
    if (s.token >= 0) out += added_[added_by_id_.at(s.token)].content;
    else out += normalizer_->normalize(s.text);
  }
  return marker_.empty() ? out : replace_all(out, marker_, marker_text_);
}

std::string StreamDecoder::push(int32_t id) {
  pending_ += tok_.token_bytes(id, skip_special_);
  size_t keep = utf8_incomplete_tail(pending_);
  std::string out = utf8_sanitize(std::string_view(pending_).substr(0, pending_.size() - keep));
  pending_.erase(0, pending_.size() - keep);
  return out;
}

std::string StreamDecoder::flush() {
  std::string out = utf8_sanitize(pending_);
  pending_.clear();
  return out;
}

}  // namespace strata
