// Shared test fixture: a random flash-tiny checkpoint (strata make-model's generator), written
// once per test binary into a temporary directory and loaded as a dsv4::Model.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "cache/cache_map.h"
#include "models/deepseek_v4/make_model.h"
#include "models/deepseek_v4/model.h"
#include "models/deepseek_v4/presets.h"

namespace strata::dsv4 {

// A V4 state placed in a pool the way the engine places a request's (through its cache map).
inline void bind_to_pool(SequenceState& st, cache::CachePool& pool, cache::PoolSeq& seq) {
  auto map = st.cache_map(pool.layout());
  cache::bind_to_pool(map, pool, seq);
}

}  // namespace strata::dsv4

namespace strata::dsv4::testing {

inline std::string tiny_model_dir(const std::string& preset = "flash-tiny", uint64_t seed = 7) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("strata_dsv4_" + preset + "_" + std::to_string(seed) + "_" +
                                              std::to_string(::getpid()));
  if (!fs::exists(dir / "config.json")) {
    MakeModelOptions o;
    o.config = preset_config(preset);
    o.seed = seed;
    o.out_dir = dir.string();
    make_model(o);
  }
  return dir.string();
}

struct TinyModel {
  std::string dir;
  std::unique_ptr<Model> model;
  explicit TinyModel(const std::string& preset = "flash-tiny", uint64_t seed = 7)
      : dir(tiny_model_dir(preset, seed)), model(Model::load(dir)) {}
  ~TinyModel() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

}  // namespace strata::dsv4::testing
