// A request body's field, absent and null alike reading as missing (OpenAI clients send null
// for parameters they leave unset).
#pragma once
#include <nlohmann/json.hpp>

namespace strata::server {

inline const nlohmann::ordered_json* field(const nlohmann::ordered_json& j, const char* name) {
  auto it = j.find(name);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

}  // namespace strata::server
