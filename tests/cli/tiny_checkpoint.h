// A random flash-tiny checkpoint in a temporary directory (removed at the end), for the
// command-line tests that run the binary on a model.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <system_error>

#include "models/deepseek_v4/make_model.h"
#include "models/deepseek_v4/presets.h"

namespace strata::test {

struct TinyCheckpoint {
  std::string dir;
  TinyCheckpoint(const std::string& tag, uint64_t seed)
      : dir((std::filesystem::temp_directory_path() / ("strata_cli_" + tag + "_" + std::to_string(::getpid()))).string()) {
    dsv4::MakeModelOptions o;
    o.config = dsv4::preset_config("flash-tiny");
    o.seed = seed;
    o.out_dir = dir;
    o.tokenizer_dir = std::string(STRATA_SHARED_DIR) + "/tokenizers/deepseek-v3";
    dsv4::make_model(o);
  }
  ~TinyCheckpoint() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  TinyCheckpoint(const TinyCheckpoint&) = delete;
  TinyCheckpoint& operator=(const TinyCheckpoint&) = delete;
};

}  // namespace strata::test
