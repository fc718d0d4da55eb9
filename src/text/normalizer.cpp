#include "text/normalizer.h"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "text/replace_all.h"
#include "text/unicode_nfc.h"

namespace strata {
namespace {

class Nfc final : public Normalizer {
 public:
  std::string normalize(std::string_view text) const override { return nfc(text); }
};

// Every occurrence of a literal string, left to right, without overlaps (SentencePiece-style
// tokenizers: " " -> "▁").
class Replace final : public Normalizer {
 public:
  Replace(std::string pattern, std::string content) : pattern_(std::move(pattern)), content_(std::move(content)) {}
  std::string normalize(std::string_view text) const override { return replace_all(text, pattern_, content_); }

 private:
  std::string pattern_, content_;
};

// The prefix before non-empty text (Llama-2-style tokenizers: "▁").
class Prepend final : public Normalizer {
 public:
  explicit Prepend(std::string prefix) : prefix_(std::move(prefix)) {}
  std::string normalize(std::string_view text) const override {
    return text.empty() ? std::string() : prefix_ + std::string(text);
  }

 private:
  std::string prefix_;
};

std::string string_field(const nlohmann::json& j, const char* key, const char* type) {
  if (!j.contains(key) || !j[key].is_string())
    throw Error(std::string("tokenizer.json: ") + type + " normalizer has no string \"" + key + "\"");
  return j[key].get<std::string>();
}

class Sequence final : public Normalizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Normalizer>> steps) : steps_(std::move(steps)) {}
  std::string normalize(std::string_view text) const override {
    std::string s(text);
    for (const auto& n : steps_) s = n->normalize(s);
    return s;
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

}  // namespace

std::unique_ptr<Normalizer> Normalizer::from_json(const nlohmann::json& j) {
  if (j.is_null()) return nullptr;
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string())
    throw Error("tokenizer.json: normalizer has no \"type\"");
  std::string type = j["type"].get<std::string>();
  if (type == "NFC") return std::make_unique<Nfc>();
  if (type == "Replace") {
    const auto& p = j.value("pattern", nlohmann::json());
    if (!p.is_object() || !p.contains("String") || !p["String"].is_string())
      throw Error("tokenizer.json: Replace normalizer: only a String pattern is supported");
    std::string pattern = p["String"].get<std::string>();
    if (pattern.empty()) throw Error("tokenizer.json: Replace normalizer: empty pattern");
    return std::make_unique<Replace>(std::move(pattern), string_field(j, "content", "Replace"));
  }
  if (type == "Prepend") return std::make_unique<Prepend>(string_field(j, "prepend", "Prepend"));
  if (type == "Sequence") {
    if (!j.contains("normalizers") || !j["normalizers"].is_array())
      throw Error("tokenizer.json: Sequence normalizer has no \"normalizers\" array");
    std::vector<std::unique_ptr<Normalizer>> steps;
    for (const auto& s : j["normalizers"]) {
      if (auto n = from_json(s)) steps.push_back(std::move(n));
    }
    // An empty sequence (DeepSeek-V3) normalizes nothing.
    if (steps.empty()) return nullptr;
    if (steps.size() == 1) return std::move(steps[0]);
    return std::make_unique<Sequence>(std::move(steps));
  }
  throw Error("tokenizer.json: unsupported normalizer type \"" + type + "\"");
}

}  // namespace strata
