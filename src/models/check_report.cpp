#include "models/model_config.h"

namespace strata::models {

std::string CheckReport::summary(size_t max_lines) const {
  std::string s = std::to_string(missing.size()) + " missing, " + std::to_string(mismatched.size()) + " mismatched";
  size_t shown = 0;
  auto list = [&](const char* tag, const std::vector<std::string>& v) {
    for (const auto& x : v) {
      if (shown++ >= max_lines) return;
      s += "; " + std::string(tag) + " " + x;
    }
  };
  list("missing", missing);
  list("mismatched", mismatched);
  if (missing.size() + mismatched.size() > max_lines)
    s += "; ... and " + std::to_string(missing.size() + mismatched.size() - max_lines) + " more";
  return s;
}

}  // namespace strata::models
