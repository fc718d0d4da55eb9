// Parameter and byte accounting for `strata inspect`: totals and per-token active counts by
// component, computed from the expected tensor list (so they hold for a config alone).
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "core/dtype.h"
#include "models/deepseek_v4/config.h"
#include "models/deepseek_v4/tensors.h"
#include "models/model_config.h"

namespace strata::dsv4 {

struct ParamCounts {
  // Main layers (embedding, layers, head); the MTP block is counted apart, as the model
  // cards' totals leave it out.
  std::map<Component, int64_t> total, active;
  int64_t total_all = 0, active_all = 0;
  int64_t mtp_total = 0, mtp_active = 0;
  std::map<DType, uint64_t> bytes;  // storage bytes by dtype, MTP included
  uint64_t bytes_all = 0;
};

// Active per token: every non-expert tensor (the embedding too, by the usual convention),
// num_experts_per_tok of the routed experts of each layer, and the shared expert.
ParamCounts count_params(const Config& c);

}  // namespace strata::dsv4

namespace strata::dsv4 {

// Bytes one decode step (batch 1) must read, as the forward pass stores things: every
// non-expert weight of the main layers as stored (wo_a in FP8; the bf16 copy made where
// wo_a_fp8_is_exact is false is not counted; in hash layers one tid2eid row and the chosen
// experts' gate rows), the head, one embedding row,
// num_experts_per_tok routed experts per layer on average, and the caches at `context` tokens
// in the pool's formats (window, the CSA top-k or all HCA entries, every indexer key,
// compressor state).
using models::DecodeTraffic;
DecodeTraffic decode_traffic(const Config& c, int64_t context);

}  // namespace strata::dsv4
