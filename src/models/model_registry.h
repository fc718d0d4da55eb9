// Which architectures strata runs, looked up by config.json's model_type.
#pragma once
#include <string>
#include <vector>

namespace strata::models {

const std::vector<std::string>& supported_model_types();
// Reads model_type from DIR/config.json (or the given .json file); throws Error listing the
// supported types when it is missing or unknown.
std::string require_supported(const std::string& dir_or_config);

}  // namespace strata::models
