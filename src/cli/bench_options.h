// The options of `strata bench` (cli/cmd_bench.cpp), shared by its measuring and reporting parts.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "cli/bench_expert_parallel.h"
#include "cli/expert_balance_option.h"

namespace strata::cli {

struct BenchOptions {
  std::string model;
  int64_t prompt_tokens = 128, decode_tokens = 16;
  int threads = 0;
  double probe_seconds = 0.5;
  bool json = false, skip_probes = false, profile = false;
  int spec_tokens = 0;
  std::vector<int> spec_batches{1, 8};
  std::vector<int> batches;        // --batches: aggregate batched decode
  bool lockstep = false;           // --lockstep: --batches by a fixed loop, no engine (bench_lockstep.h)
  std::vector<int64_t> contexts;  // --context: decode step time at these context lengths
  int64_t context_steps = 4;
  int64_t prefix_tokens = 0, suffix_tokens = 16;  // --prefix-tokens: prefix-cache hit vs cold TTFT
  std::string indexer_cache = "fp8";  // --indexer-cache: index key storage of the decode states
  std::vector<std::string> numerics;  // --numerics: the profiles to measure, one after another
  std::string json_schema;            // --json-schema: structured output's cost (bench_structured.h)
  bool expert_parallel = false;       // --ep-ranks: dispatch planning alone (bench_expert_parallel.h)
  ExpertParallelOptions ep;
  ExpertBalanceOptions balance;       // --ep-balance: replicas in a running job (expert_balance_option.h)
};

// The machine's limits from the probes at the start (0 where --skip-probes).
struct BenchMachine {
  bool probed = false;
  int threads = 0;
  double read_gbps = 0, bf16_gflops = 0, fp64_gflops = 0;
};

}  // namespace strata::cli
