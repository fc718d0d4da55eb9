// Reading JSON files and typed fields with errors that name the file and the key.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace strata {

// Parses a JSON file; throws Error "<path>: ..." if unreadable or malformed.
nlohmann::json read_json_file(const std::string& path);
// The same keeping objects' key order (a JSON Schema's properties are written in that order).
nlohmann::ordered_json read_ordered_json_file(const std::string& path);

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
