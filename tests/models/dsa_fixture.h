// Shared test fixture: random deepseek-v3.2-tiny and glm5-tiny checkpoints, written once per
// test binary into a temporary directory.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "models/dsa/model.h"
#include "models/registry.h"

namespace strata::dsa::testing {

struct TinyDsa {
  std::string dir;
  std::shared_ptr<const Model> model;
  TinyDsa(const std::string& preset, uint64_t seed) {
    namespace fs = std::filesystem;
    dir = (fs::temp_directory_path() / ("strata_" + preset + "_" + std::to_string(seed) + "_" + std::to_string(::getpid())))
              .string();
    models::MakeModelRequest q;
    q.preset = preset;
    q.seed = seed;
    q.out_dir = dir;
    q.tokenizer_dir = std::string(STRATA_SHARED_DIR) + "/tokenizers/deepseek-v3";
    models::architecture_for_preset(q.preset).make_model(q);
    model = Model::load(dir);
  }
  ~TinyDsa() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

inline TinyDsa& tiny_v32() {
  static TinyDsa t("deepseek-v3.2-tiny", 11);
  return t;
}
inline TinyDsa& tiny_glm5() {
  static TinyDsa t("glm5-tiny", 12);
  return t;
}

}  // namespace strata::dsa::testing
