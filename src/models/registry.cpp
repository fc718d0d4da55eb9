#include "models/registry.h"

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "io/json_file.h"
#include "models/deepseek_v4/architecture.h"
#include "models/dsa/architecture.h"
#include "models/gemma4/architecture.h"
#include "models/qwen3_5/architecture.h"
#include "models/rank_agreement.h"

namespace strata::models {

const std::vector<const Architecture*>& architectures() {
  static const std::vector<const Architecture*> all = {&dsv4::architecture(), &qwen35::architecture(),
                                                             &dsa::architecture(), &gemma4::architecture()};
  return all;
}

std::vector<std::string> supported_model_types() {
  std::vector<std::string> out;
  for (const auto* a : architectures()) out.insert(out.end(), a->model_types.begin(), a->model_types.end());
  return out;
}

namespace {

std::string config_path(const std::string& dir_or_file) {
  if (std::filesystem::is_directory(dir_or_file)) return (std::filesystem::path(dir_or_file) / "config.json").string();
  return dir_or_file;
}

const Architecture* by_type(const std::string& t) {
  for (const auto* a : architectures())
    if (std::find(a->model_types.begin(), a->model_types.end(), t) != a->model_types.end()) return a;
  return nullptr;
}

}  // namespace

const Architecture& architecture_of(const nlohmann::json& j, const std::string& where) {
  std::string list;
  for (const auto& s : supported_model_types()) list += (list.empty() ? "" : ", ") + s;
  if (!j.is_object()) throw Error(where + ": not a JSON object (supported model types: " + list + ")");
  std::string mt;
  if (j.contains("model_type")) {
    if (!j["model_type"].is_string()) throw Error(where + ": model_type must be a string");
    mt = j["model_type"].get<std::string>();
    if (const auto* a = by_type(mt)) return *a;
  }
  if (j.contains("text_config") && j["text_config"].is_object() && j["text_config"].contains("model_type") &&
      j["text_config"]["model_type"].is_string())
    if (const auto* a = by_type(j["text_config"]["model_type"].get<std::string>())) return *a;
  if (j.contains("architectures") && j["architectures"].is_array())
    for (const auto& c : j["architectures"])
      for (const auto* a : architectures())
        if (c.is_string() && std::find(a->hf_classes.begin(), a->hf_classes.end(), c.get<std::string>()) != a->hf_classes.end())
          return *a;
  if (mt.empty()) throw Error(where + ": no model_type (supported: " + list + ")");
  throw Error(where + ": unknown model_type '" + mt + "' (supported: " + list + ")");
}

std::unique_ptr<ModelConfig> load_config(const std::string& dir_or_file) {
  const std::string path = config_path(dir_or_file);
  const nlohmann::json j = read_json_file(path);
  return architecture_of(j, path).parse_config(j, path);
}

std::unique_ptr<Model> load_model(const std::string& dir) {
  const std::string path = config_path(dir);
  std::unique_ptr<Model> m = architecture_of(read_json_file(path), path).load(dir);
  require_same_model_on_all_ranks(path, *m);
  return m;
}

std::vector<std::string> preset_names() {
  std::vector<std::string> out;
  for (const auto* a : architectures()) out.insert(out.end(), a->presets.begin(), a->presets.end());
  return out;
}

const Architecture& architecture_for_preset(const std::string& preset) {
  for (const auto* a : architectures())
    if (std::find(a->presets.begin(), a->presets.end(), preset) != a->presets.end()) return *a;
  std::string list;
  for (const auto& s : preset_names()) list += (list.empty() ? "" : ", ") + s;
  throw Error("unknown preset '" + preset + "' (known: " + list + ")");
}

std::unique_ptr<ModelConfig> preset_model_config(const std::string& preset) {
  const Architecture& a = architecture_for_preset(preset);
  return a.parse_config(a.preset_config(preset), "preset " + preset);
}

}  // namespace strata::models
