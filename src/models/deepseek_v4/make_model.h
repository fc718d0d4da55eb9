// `strata make-model`: writes a random DeepSeek-V4 checkpoint in the official layout
// (config.json with the official keys, safetensors shards + index, tokenizer files), with
// FP8 weights from real 128x128 block quantization (UE8M0 scales), FP4 experts from real MXFP4
// quantization, BF16/F32 tensors where the official checkpoint has them, and I64 tid2eid
// tables. Values are scaled so activations stay O(1) through the layers and logits are not
// degenerate. Every tensor is generated from (seed, tensor name, row), so the same seed gives
// byte-identical files at any thread count.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "models/deepseek_v4/config.h"

namespace strata::dsv4 {

struct MakeModelOptions {
  Config config;
  uint64_t seed = 0;
  std::string out_dir;
  std::string tokenizer_dir;   // holds tokenizer.json and tokenizer_config.json to copy
  uint64_t shard_bytes = 0;    // 0: 32 MB for small models, 2 GB otherwise
  int threads = 0;             // 0: hardware concurrency
  std::function<void(uint64_t done, uint64_t total)> progress;
};

void make_model(const MakeModelOptions& opt);

}  // namespace strata::dsv4
