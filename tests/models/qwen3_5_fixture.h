// Shared test fixture: a random qwen3.5-tiny checkpoint (3 Gated DeltaNet layers + 1 gated
// attention layer + MTP, tied head), written once per test binary into a temporary directory.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "models/registry.h"
#include "models/qwen3_5/model.h"

namespace strata::qwen35::testing {

struct TinyQwen {
  std::string dir;
  std::shared_ptr<const Model> model;
  explicit TinyQwen(uint64_t seed = 5) {
    namespace fs = std::filesystem;
    dir = (fs::temp_directory_path() / ("strata_qwen35_" + std::to_string(seed) + "_" + std::to_string(::getpid()))).string();
    models::MakeModelRequest q;
    q.preset = "qwen3.5-tiny";
    q.seed = seed;
    q.out_dir = dir;
    q.tokenizer_dir = std::string(STRATA_SHARED_DIR) + "/tokenizers/qwen3";
    models::architecture_for_preset(q.preset).make_model(q);
    model = Model::load(dir);
  }
  ~TinyQwen() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

inline TinyQwen& tiny() {
  static TinyQwen t;
  return t;
}

}  // namespace strata::qwen35::testing
