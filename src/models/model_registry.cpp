#include "models/model_registry.h"

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "io/json_file.h"

namespace strata::models {

const std::vector<std::string>& supported_model_types() {
  static const std::vector<std::string> t = {"deepseek_v4"};
  return t;
}

std::string require_supported(const std::string& dir_or_config) {
  std::string path = dir_or_config;
  if (std::filesystem::is_directory(path)) path = (std::filesystem::path(path) / "config.json").string();
  auto j = read_json_file(path);
  std::string list;
  for (auto& s : supported_model_types()) list += (list.empty() ? "" : ", ") + s;
  if (!j.is_object() || !j.contains("model_type") || !j["model_type"].is_string())
    throw Error(path + ": no model_type (supported: " + list + ")");
  std::string mt = j["model_type"].get<std::string>();
  const auto& s = supported_model_types();
  if (std::find(s.begin(), s.end(), mt) == s.end())
    throw Error(path + ": unknown model_type '" + mt + "' (supported: " + list + ")");
  return mt;
}

}  // namespace strata::models
