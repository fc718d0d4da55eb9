#include "cli/expert_balance_option.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "dist/world.h"
#include "models/expert_balance.h"
#include "text/tokenizer.h"

namespace strata::cli {

void add_expert_balance_options(CLI::App& c, ExpertBalanceOptions& o, bool slots_option) {
  c.add_option("--ep-balance", o.sample_file,
               "under mpirun: replicate the hottest experts of the token-routed layers from this sample text's "
               "token frequencies (docs/distributed.md)");
  if (slots_option)
    c.add_option("--ep-extra-slots", o.extra_slots,
                 "with --ep-balance: replica slots per rank beyond its shard (default an eighth of it, at least 1)")
        ->check(CLI::Range(int64_t(0), int64_t(1) << 20));
}

void apply_expert_balance(models::Model& m, const std::string& model_dir, const ExpertBalanceOptions& o) {
  if (o.sample_file.empty()) return;
  std::string text, error;
  if (dist::rank() == 0) {
    std::ifstream f(o.sample_file, std::ios::binary);
    if (!f) error = "--ep-balance: cannot read " + o.sample_file;
    std::stringstream ss;
    ss << f.rdbuf();
    text = ss.str();
    if (error.empty() && text.empty()) error = "--ep-balance: " + o.sample_file + " is empty";
  }
  // rank 0's verdict and text on every rank, so all fail or all balance alike
  error = dist::broadcast_string(error);
  if (!error.empty()) throw Error(error);
  text = dist::broadcast_string(text);
  const Tokenizer tok = Tokenizer::load(model_dir);
  std::vector<int64_t> ids;
  for (int32_t id : tok.encode(text, false)) ids.push_back(id);
  const auto layers = models::balance_experts(m, ids, o.extra_slots);
  if (layers.empty())
    std::fprintf(stderr, "note: --ep-balance has nothing to do in one process\n");
  for (const auto& L : layers)
    std::fprintf(stderr, "expert balance, layer %lld: %lld replicas; busiest rank %.2fx the mean on the sample (%.2fx without)\n",
                 (long long)L.layer, (long long)L.replicas, L.rank_imbalance_after, L.rank_imbalance_before);
}

}  // namespace strata::cli
