// Shared test fixture: a random hybrid-tiny checkpoint (strata_hybrid, the synthetic test
// architecture: Gated DeltaNet + full attention + MTP), written once per test binary into a
// temporary directory and loaded through the registry.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "models/registry.h"
#include "models/synthetic_hybrid/model.h"

namespace strata::hybrid::testing {

struct TinyHybrid {
  std::string dir;
  std::shared_ptr<const Model> model;
  explicit TinyHybrid(uint64_t seed = 5) {
    namespace fs = std::filesystem;
    dir = (fs::temp_directory_path() / ("strata_hybrid_" + std::to_string(seed) + "_" + std::to_string(::getpid()))).string();
    models::MakeModelRequest q;
    q.preset = "hybrid-tiny";
    q.seed = seed;
    q.out_dir = dir;
    q.tokenizer_dir = std::string(STRATA_SHARED_DIR) + "/tokenizers/qwen3";
    models::architecture_for_preset(q.preset).make_model(q);
    model = Model::load(dir);
  }
  ~TinyHybrid() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

inline TinyHybrid& tiny() {
  static TinyHybrid t;
  return t;
}

}  // namespace strata::hybrid::testing
