#include "text/normalizer.h"

#include <nlohmann/json.hpp>
#include <vector>

#include "core/error.h"
#include "text/unicode_nfc.h"

namespace strata {
namespace {

class Nfc final : public Normalizer {
 public:
  std::string normalize(std::string_view text) const override { return nfc(text); }
};

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
