// The DeepSeek-V4 engine tests' model: a flash-tiny checkpoint with DeepSeek-V3's tokenizer,
// made once per test binary.
#pragma once
#include <memory>
#include <string>

#include "models/dsv4_fixture.h"
#include "text/tokenizer.h"

namespace strata::engine::testing {

struct Dsv4EngineModel {
  dsv4::testing::TinyModel tiny;
  std::shared_ptr<dsv4::Model> model;
  std::shared_ptr<const Tokenizer> tok;
  Dsv4EngineModel()
      : model(std::move(tiny.model)),
        tok(std::make_shared<const Tokenizer>(Tokenizer::load(std::string(STRATA_SHARED_DIR) + "/tokenizers/deepseek-v3"))) {}
};

inline Dsv4EngineModel& shared() {
  static Dsv4EngineModel s;
  return s;
}

}  // namespace strata::engine::testing
