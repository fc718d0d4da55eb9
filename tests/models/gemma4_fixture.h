// Shared test fixture: random Gemma 4 tiny checkpoints (presets.h) with their tiny tokenizer,
// each written once per test binary into a temporary directory and loaded.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "models/gemma4/model.h"
#include "models/registry.h"

namespace strata::gemma4::testing {

struct TinyGemma {
  std::string dir;
  std::shared_ptr<const Model> model;
  TinyGemma(const std::string& preset, uint64_t seed) {
    namespace fs = std::filesystem;
    dir = (fs::temp_directory_path() / ("strata_" + preset + "_" + std::to_string(seed) + "_" + std::to_string(::getpid())))
              .string();
    models::MakeModelRequest q;
    q.preset = preset;
    q.seed = seed;
    q.out_dir = dir;
    models::architecture_for_preset(q.preset).make_model(q);
    model = Model::load(dir);
  }
  ~TinyGemma() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

inline TinyGemma& tiny_checkpoint(const std::string& preset) {
  static std::map<std::string, std::unique_ptr<TinyGemma>> all;
  auto& t = all[preset];
  if (!t) t = std::make_unique<TinyGemma>(preset, 5);
  return *t;
}
inline const Model& tiny(const std::string& preset) { return *tiny_checkpoint(preset).model; }

inline const char* const kTinyPresets[] = {"gemma4-tiny", "gemma4-kv-tiny", "gemma4-e-tiny", "gemma4-moe-tiny"};

}  // namespace strata::gemma4::testing
