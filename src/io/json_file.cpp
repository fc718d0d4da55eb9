#include "io/json_file.h"

#include <fstream>
#include <sstream>

#include "core/error.h"

namespace strata {
using nlohmann::json;

namespace {
template <class Json>
Json parse_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot open");
  std::stringstream ss;
  ss << f.rdbuf();
  try {
    return Json::parse(ss.str());
  } catch (const json::exception& e) {
    throw Error(path + ": not valid JSON: " + e.what());
  }
}
}  // namespace

json read_json_file(const std::string& path) { return parse_file<json>(path); }
nlohmann::ordered_json read_ordered_json_file(const std::string& path) { return parse_file<nlohmann::ordered_json>(path); }

namespace {
const json& need(const json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) throw Error(where + ": missing key '" + key + "'");
  return j[key];
}
bool absent(const json& j, const char* key) { return !j.is_object() || !j.contains(key) || j[key].is_null(); }
[[noreturn]] void wrong(const char* key, const char* type, const std::string& where) {
  throw Error(where + ": key '" + key + "' must be " + type);
}
}  // namespace

int64_t json_int(const json& j, const char* key, const std::string& where) {
  const json& v = need(j, key, where);
  if (const auto i = json_exact_int(v)) return *i;
  wrong(key, "an integer", where);
}
double json_number(const json& j, const char* key, const std::string& where) {
  const json& v = need(j, key, where);
  if (!v.is_number()) wrong(key, "a number", where);
  return v.get<double>();
}
bool json_bool(const json& j, const char* key, const std::string& where) {
  const json& v = need(j, key, where);
  if (!v.is_boolean()) wrong(key, "true or false", where);
  return v.get<bool>();
}
std::string json_string(const json& j, const char* key, const std::string& where) {
  const json& v = need(j, key, where);
  if (!v.is_string()) wrong(key, "a string", where);
  return v.get<std::string>();
}
int64_t json_int_or(const json& j, const char* key, int64_t fb, const std::string& where) {
  return absent(j, key) ? fb : json_int(j, key, where);
}
double json_number_or(const json& j, const char* key, double fb, const std::string& where) {
  return absent(j, key) ? fb : json_number(j, key, where);
}
bool json_bool_or(const json& j, const char* key, bool fb, const std::string& where) {
  return absent(j, key) ? fb : json_bool(j, key, where);
}
std::string json_string_or(const json& j, const char* key, const std::string& fb, const std::string& where) {
  return absent(j, key) ? fb : json_string(j, key, where);
}

}  // namespace strata
