// --batches under mpirun (or with --lockstep): aggregate decode tokens/s of B sequences stepped
// together by a fixed loop of Model::forward_batch — prefill all B prompts in one pass, then
// one greedy token each per step — with no engine, whose scheduling follows wall-clock time and
// so would differ between ranks. Reports the share of the decode steps spent in the expert
// exchange (src/dist), waits for slower ranks included.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/model.h"

namespace strata::cli {

nlohmann::ordered_json bench_lockstep_batches(const models::Model& model, int64_t prompt_tokens, int64_t decode_tokens,
                                              const std::vector<int>& batches);

}  // namespace strata::cli
