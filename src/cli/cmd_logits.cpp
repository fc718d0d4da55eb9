// `strata logits --model DIR --ids 1,2,3,... --prefill K --out FILE.npy`: the numerical
// contract with the reference. ids[0..K) are prefilled from position 0, then each remaining id
// is decoded one step (teacher forcing); the file holds float32 logits [1 + n − K, vocab]: the
// last-position logits after the prefill, then after every decode step.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>

#include "cli/commands.h"
#include "cli/expert_balance_option.h"
#include "cli/numerics_option.h"
#include "cli/token_ids.h"
#include "core/error.h"
#include "dist/world.h"
#include "io/npy.h"
#include "models/registry.h"

namespace strata::cli {
namespace {

struct Opts {
  std::string model, ids, out, numerics;
  int64_t prefill = -1, chunk = 0;
  bool stats = false;
  ExpertBalanceOptions balance;
};

void run_logits(const Opts& o) {
  std::vector<int64_t> ids = parse_token_ids(o.ids);
  const int64_t n = int64_t(ids.size());
  const int64_t k = o.prefill < 0 ? n : o.prefill;
  if (k < 1 || k > n)
    throw Error("--prefill " + std::to_string(k) + " must be between 1 and the number of ids (" + std::to_string(n) + ")");
  select_numerics(o.numerics, "logits");
  auto model = models::load_model(o.model);
  apply_expert_balance(*model, o.model, o.balance);
  const int64_t V = model->vocab_size();
  for (int64_t id : ids)
    if (id >= V) throw Error("--ids: token id " + std::to_string(id) + " is outside the vocabulary [0, " + std::to_string(V) + ")");
  if (n > model->max_positions())
    throw Error("--ids: " + std::to_string(n) + " tokens exceed max_position_embeddings " + std::to_string(model->max_positions()));
  std::vector<float> all;
  all.reserve(size_t((1 + n - k) * V));
  auto st = model->new_sequence();
  // Prefill in pieces of --chunk tokens (all at once by default); the result is the same.
  const int64_t step = o.chunk > 0 ? o.chunk : k;
  std::vector<float> lg;
  for (int64_t b = 0; b < k; b += step) lg = model->forward(*st, ids.data() + b, std::min(step, k - b));
  all.insert(all.end(), lg.begin(), lg.end());
  for (int64_t i = k; i < n; ++i) {
    lg = model->decode(*st, ids[size_t(i)]);
    all.insert(all.end(), lg.begin(), lg.end());
  }
  if (dist::rank() == 0) write_npy(o.out, {1 + n - k, V}, all.data());  // rank 0 writes for an MPI job
  if (o.stats) std::fputs(model->describe_state(*st).c_str(), stdout);
  std::fprintf(stderr, "wrote %s: [%lld, %lld] float32, numerics %s\n", o.out.c_str(), (long long)(1 + n - k),
               (long long)V, std::string(numerics_name(active_numerics())).c_str());
}

AutoRegister reg([](CLI::App& app) {
  auto o = std::make_shared<Opts>();
  auto* c = app.add_subcommand("logits", "prefill token ids, decode the rest with teacher forcing, write fp32 logits (.npy)");
  c->add_option("--model", o->model, "model directory (config.json + safetensors)")->required();
  c->add_option("--ids", o->ids, "comma-separated token ids")->required();
  c->add_option("--prefill", o->prefill, "how many ids to prefill at once (default: all)");
  c->add_option("--out", o->out, "output .npy file")->required();
  c->add_option("--chunk", o->chunk, "prefill in chunks of N tokens (same logits as one piece)");
  add_numerics_option(*c, o->numerics);
  add_expert_balance_options(*c, o->balance);
  c->add_flag("--stats", o->stats, "print what each layer holds after the run (window, entries, index keys, tail)");
  c->callback([o] { run_logits(*o); });
});

}  // namespace
}  // namespace strata::cli
