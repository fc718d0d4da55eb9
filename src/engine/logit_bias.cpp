#include "engine/logit_bias.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"

namespace strata {

void validate_logit_bias(const LogitBias& bias) {
  for (const auto& [id, b] : bias) {
    if (id < 0) throw Error("logit_bias contains the negative token id " + std::to_string(id));
    // Written so that NaN is rejected too.
    if (!(-kMaxLogitBias <= b && b <= kMaxLogitBias))
      throw Error("logit_bias values must be in [-100, 100] (token " + std::to_string(id) + " has " +
                  nlohmann::json(b).dump() + ")");
  }
}

LogitBias logit_bias_from_json(const nlohmann::json& j) {
  if (!j.is_object())
    throw Error("logit_bias must be an object mapping token ids (as strings) to biases in [-100, 100]");
  LogitBias out;
  for (const auto& [key, value] : j.items()) {
    // Decimal digits only: "-1", "1.0", " 7" or "0x10" are not token ids.
    bool digits = !key.empty() && key.size() <= 10;
    for (char c : key) digits = digits && c >= '0' && c <= '9';
    const long long id = digits ? std::stoll(key) : -1;
    if (!digits || id > INT32_MAX)
      throw Error("logit_bias keys must be token ids written as decimal integers; got \"" + key + "\"");
    if (!value.is_number()) throw Error("logit_bias values must be numbers (token " + key + ")");
    if (!out.emplace(int32_t(id), value.get<double>()).second)
      throw Error("logit_bias names token " + std::to_string(id) + " twice");
  }
  validate_logit_bias(out);
  return out;
}

nlohmann::json logit_bias_to_json(const LogitBias& bias) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [id, b] : bias) j[std::to_string(id)] = b;
  return j;
}

void apply_logit_bias(std::span<float> logits, const LogitBias& bias) {
  for (const auto& [id, b] : bias) logits[size_t(id)] += float(b);
}

}  // namespace strata
