// Reading JSON files and typed fields with errors that name the file and the key.
#pragma once
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace strata {

// Parses a JSON file; throws Error "<path>: ..." if unreadable or malformed.
nlohmann::json read_json_file(const std::string& path);
// The same keeping objects' key order (a JSON Schema's properties are written in that order).
nlohmann::ordered_json read_ordered_json_file(const std::string& path);

// The integer a JSON number holds exactly: 2 and 2.0 do; 2.5, 1e300 and integers beyond int64
// do not (converting those would be undefined or wrap).
template <class Json>
std::optional<int64_t> json_exact_int(const Json& v) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.template get<uint64_t>();
    if (u > uint64_t(INT64_MAX)) return std::nullopt;
    return int64_t(u);
  }
  if (v.is_number_integer()) return v.template get<int64_t>();
  if (v.is_number_float()) {
    const double d = v.template get<double>();
    if (d >= -0x1p63 && d < 0x1p63 && d == std::trunc(d)) return int64_t(d);
  }
  return std::nullopt;
}

// Typed access to an object's key. `where` prefixes error messages (usually the file path).
int64_t json_int(const nlohmann::json& j, const char* key, const std::string& where);
double json_number(const nlohmann::json& j, const char* key, const std::string& where);
bool json_bool(const nlohmann::json& j, const char* key, const std::string& where);
std::string json_string(const nlohmann::json& j, const char* key, const std::string& where);

// Optional variants: the fallback when the key is absent or null, an error on a wrong type.
int64_t json_int_or(const nlohmann::json& j, const char* key, int64_t fallback, const std::string& where);
double json_number_or(const nlohmann::json& j, const char* key, double fallback, const std::string& where);
bool json_bool_or(const nlohmann::json& j, const char* key, bool fallback, const std::string& where);
std::string json_string_or(const nlohmann::json& j, const char* key, const std::string& fallback, const std::string& where);

}  // namespace strata
