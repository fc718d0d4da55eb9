// --ep-balance FILE [--ep-extra-slots K]: replicas of the hottest experts of the token-routed
// layers, from the token frequencies of a sample text (models/expert_balance.h), for commands
// that run over MPI ranks. Rank 0 reads the file; every rank balances from its tokens.
#pragma once
#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "models/model.h"

namespace strata::cli {

struct ExpertBalanceOptions {
  std::string sample_file;
  int64_t extra_slots = -1;  // -1: an eighth of a shard, at least 1
};

// slots_option: also --ep-extra-slots (bench has its own, shared with --ep-ranks)
void add_expert_balance_options(CLI::App& c, ExpertBalanceOptions& o, bool slots_option = true);
// Balances m when --ep-balance was given (a note on stderr per layer); nothing otherwise.
void apply_expert_balance(models::Model& m, const std::string& model_dir, const ExpertBalanceOptions& o);

}  // namespace strata::cli
