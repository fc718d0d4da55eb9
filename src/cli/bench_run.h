// One pass of `strata bench`'s measurements on a loaded model: the prefill and batch-1 decode,
// then what the options ask for (--context, --batches, --prefix-tokens, --spec-tokens), as the
// JSON keys "numerics" (the profile active during the pass), "prefill", "decode",
// "long_context", "batched_decode", "prefix_cache" and "speculative". With probes, the read
// probe again right after the decode steps: "read_gbps_after_decode" (on a shared host the
// bandwidth moves between the start's probe and the steps, and the roofline is only as good as
// its probe).
#pragma once
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/bench_options.h"
#include "models/model.h"

namespace strata::cli {

nlohmann::ordered_json bench_run(const BenchOptions& o, const std::shared_ptr<const models::Model>& model,
                                 const BenchMachine& machine);

// The prefill and one decode step, untimed: a process's first prefill is much slower than the
// next ones (measured ~1.5x on the tiny checkpoint), which would favour every pass but the first
// when passes are compared.
void bench_warm_up(const BenchOptions& o, const models::Model& model);

}  // namespace strata::cli
