// The `normalizer` of tokenizer.json: applied to text between added tokens before
// pre-tokenization. Supported: null, NFC, Replace (a String pattern), Prepend and Sequence (of
// supported normalizers).
#pragma once
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

namespace strata {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual std::string normalize(std::string_view text) const = 0;
  // nullptr for a JSON null (no normalization); throws Error for unknown types.
  static std::unique_ptr<Normalizer> from_json(const nlohmann::json& j);
};

}  // namespace strata
