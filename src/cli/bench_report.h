// `strata bench`'s text output: the lines of one bench_run (cli/bench_run.h), from its JSON.
#pragma once
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/bench_options.h"

namespace strata::cli {

// read_gbps_after: the read probe right after the decode steps (0: not probed).
void print_bench_run(const nlohmann::ordered_json& run, const BenchOptions& o, bool probed, double read_gbps_after);
// With several --numerics profiles: each later pass's tokens/s as a ratio to the first's.
void print_profiles_compared(const std::vector<nlohmann::ordered_json>& runs);

}  // namespace strata::cli
