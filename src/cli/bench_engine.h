// The engine-driven parts of `strata bench`.
//
// --batches B,...: aggregate decode tokens/s of B greedy requests decoding together through the
// engine (continuous batching; counted from the moment every request has its first token), and
// with profile the products of those steps by weight shape (cli/bench_profile.h).
//
// --prefix-tokens N: time to first token through the engine (prefix caching on) of a request
// whose prompt is an N-token prefix + a short suffix: cold (a prefix nobody sent before) vs a
// hit (the same prefix just served with another suffix), with the hit's reused and recomputed
// tokens, and whether the hit's first token equals a cold run's.
//
// --spec-tokens N: decode tokens/s through the engine without speculation, with MTP drafts,
// and with forced acceptance (drafts replaced by the target's own greedy continuation: the
// verification path's cost and the ceiling), at each of --spec-batches, with acceptance rate
// and mean accepted length.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/model.h"
#include "text/tokenizer.h"

namespace strata::cli {

nlohmann::ordered_json bench_batches(const std::shared_ptr<const models::Model>& model, const std::shared_ptr<const Tokenizer>& tok,
                                     int64_t prompt_tokens, int64_t decode_tokens, const std::vector<int>& batches,
                                     bool profile = false, double read_gbps = 0);

nlohmann::ordered_json bench_prefix(const std::shared_ptr<const models::Model>& model, const std::shared_ptr<const Tokenizer>& tok,
                                    int64_t prefix_tokens, int64_t suffix_tokens);

nlohmann::ordered_json bench_speculative(const std::shared_ptr<const models::Model>& model,
                                         const std::shared_ptr<const Tokenizer>& tok, int spec_tokens,
                                         int64_t prompt_tokens, int64_t decode_tokens, const std::vector<int>& batches);

}  // namespace strata::cli
