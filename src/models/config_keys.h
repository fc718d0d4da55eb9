// Which keys of a config.json a parser read, so that "unknown" means present in the file but
// never read (no hand-kept list to drift from the parser), and so that `strata inspect` can
// show each optional key's value in force and where it came from.
//
// A parser reads every JSON object through a ConfigReader and ends with ConfigKeys::finish():
// an unknown key within two edits of a setting (a key the parser reads, required or not) is
// an error, because a default would silently stand in for the value the file meant to give;
// every other unknown key is listed on one warning line on stderr (docs/architecture.md).
#pragma once
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace strata::models {

// An optional setting: the file's value, or the parser's default.
struct OptionalKey {
  std::string key;  // path from the file's top level, "rope_scaling.beta_fast"
  nlohmann::json value;
  bool from_file = false;
};

class ConfigKeys {
 public:
  const std::vector<OptionalKey>& optional() const { return optional_; }
  // Present in the file, never read, not known metadata (after finish()), as paths.
  const std::vector<std::string>& unknown() const { return unknown_; }
  // The line printed for them, "" when none.
  const std::string& warning() const { return warning_; }

  // Call once every key has been read, while the parsed JSON is still alive. Throws Error
  // "<where>: unknown key 'K' (did you mean 'S'?)" for a near miss of a setting; otherwise
  // prints the warning (one line, stderr) if any key is unknown.
  void finish();

 private:
  friend class ConfigReader;
  struct Object {
    const nlohmann::json* json;
    std::string path, where;  // "rope_scaling." ; "config.json: rope_scaling"
    bool is_config;           // a (sub)config: transformers' common attributes are known
    std::set<std::string> settings, metadata;
  };
  std::vector<Object> objects_;
  std::vector<OptionalKey> optional_;
  std::vector<std::string> unknown_;
  std::string warning_;
};

// One JSON object of a config.json, every key it hands out recorded in a ConfigKeys.
class ConfigReader {
 public:
  // The file's top level (or a nested config such as a VLM's text_config): transformers'
  // common attributes (transformers_version, torch_dtype, auto_map, ...) are known metadata.
  ConfigReader(const nlohmann::json& config, const std::string& where, ConfigKeys& keys);

  // By value: a reference would dangle once a nested object is read (objects_ grows).
  std::string where() const { return keys_->objects_[index_].where; }
  // Present and not null; reads nothing.
  bool has(const char* key) const;

  // Required settings: "missing key 'K'" (naming a near sibling) or a type error.
  int64_t integer(const char* key);
  double number(const char* key);
  std::string string(const char* key);
  template <class T>
  T get(const char* key);

  // Optional settings: the file's value, else the fallback; recorded for inspect.
  int64_t integer_or(const char* key, int64_t fallback);
  double number_or(const char* key, double fallback);
  bool boolean_or(const char* key, bool fallback);
  std::string string_or(const char* key, const std::string& fallback);
  template <class T>
  T get_or(const char* key, T fallback);
  // An optional id or list of ids (eos_token_id): [] when absent or null.
  std::vector<int64_t> ids_or_empty(const char* key);

  // A nested object read key by key (its own unknown keys are found too). object() requires
  // it; optional_object() returns nothing when the key is absent or null, and then records
  // `fallback` (what its absence means) as the value in force. `config`: a nested
  // transformers config.
  ConfigReader object(const char* key, bool config = false);
  std::optional<ConfigReader> optional_object(const char* key, const nlohmann::json& fallback, bool config = false);

  // Keys this object may hold that change nothing strata computes (training-only settings,
  // the vision tower's, a key another one supersedes): never unknown, never an error.
  void metadata(std::initializer_list<const char*> keys);
  // A metadata key whose value the parser keeps (to write it back), checked for type.
  template <class T>
  T metadata_or(const char* key, T fallback);

 private:
  ConfigReader(const nlohmann::json& obj, std::string path, std::string where, bool config, ConfigKeys& keys);
  void setting(const char* key);
  void record(const char* key, nlohmann::json value, bool from_file);
  [[noreturn]] void missing(const char* key) const;
  [[noreturn]] void wrong_type(const char* key) const;

  const nlohmann::json* obj_;
  ConfigKeys* keys_;
  size_t index_;
};

template <class T>
T ConfigReader::get(const char* key) {
  setting(key);
  if (!has(key)) missing(key);
  try {
    return (*obj_)[key].get<T>();
  } catch (const nlohmann::json::exception&) {
    wrong_type(key);
  }
}

template <class T>
T ConfigReader::get_or(const char* key, T fallback) {
  setting(key);
  if (!has(key)) {
    record(key, nlohmann::json(fallback), false);
    return fallback;
  }
  T v = get<T>(key);
  record(key, nlohmann::json(v), true);
  return v;
}

template <class T>
T ConfigReader::metadata_or(const char* key, T fallback) {
  keys_->objects_[index_].metadata.insert(key);
  if (!has(key)) return fallback;
  try {
    return (*obj_)[key].get<T>();
  } catch (const nlohmann::json::exception&) {
    wrong_type(key);
  }
}

}  // namespace strata::models
