// Which architectures strata runs: each folder under src/models registers one Architecture
// here (registry.cpp lists them), and everything above src/models builds configs and models
// through these functions alone. A config.json is matched by its model_type, else by its
// text_config's (multimodal checkpoints), else by its "architectures" class names.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/model.h"
#include "models/model_config.h"

namespace strata::models {

// `strata make-model`: a random checkpoint of a named preset, in the official layout.
struct MakeModelRequest {
  std::string preset;
  uint64_t seed = 0;
  std::string out_dir;
  std::string tokenizer_dir;  // holds tokenizer.json and tokenizer_config.json to copy
  uint64_t shard_bytes = 0;   // 0: the architecture's default
  int threads = 0;            // 0: hardware concurrency
  std::function<void(uint64_t done, uint64_t total)> progress;
};

struct Architecture {
  std::string name;                      // its folder under src/models
  std::vector<std::string> model_types;  // config.json model_type values it reads
  std::vector<std::string> hf_classes;   // config.json "architectures" names it reads
  std::function<std::unique_ptr<ModelConfig>(const nlohmann::json& config, const std::string& where)> parse_config;
  std::function<std::unique_ptr<Model>(const std::string& dir)> load;
  std::vector<std::string> presets;
  // The config.json a preset stands for (`ledger --preset`, `inspect --preset`).
  std::function<nlohmann::json(const std::string& preset)> preset_config;
  std::function<void(const MakeModelRequest&)> make_model;
  std::string tokenizer;  // the tokenizer folder (shared/tokenizers/<name>) its presets ship; "": none
};

const std::vector<const Architecture*>& architectures();
// Every model_type some architecture reads.
std::vector<std::string> supported_model_types();
// The architecture of a parsed config.json; throws Error listing the supported types.
const Architecture& architecture_of(const nlohmann::json& config, const std::string& where);
// DIR/config.json, or the .json file itself.
std::unique_ptr<ModelConfig> load_config(const std::string& dir_or_file);
// Opens DIR (config.json + safetensors), checks every tensor against the config, binds the
// weights. Throws Error naming what is wrong.
std::unique_ptr<Model> load_model(const std::string& dir);

std::vector<std::string> preset_names();
// The architecture that has `preset`; throws Error listing every preset.
const Architecture& architecture_for_preset(const std::string& preset);
// A preset's config, parsed as its config.json would be.
std::unique_ptr<ModelConfig> preset_model_config(const std::string& preset);

}  // namespace strata::models
