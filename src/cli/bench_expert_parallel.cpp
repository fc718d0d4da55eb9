#include "cli/bench_expert_parallel.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "core/error.h"
#include "models/expert_load.h"
#include "models/expert_placement.h"
#include "models/registry.h"
#include "models/token_routing.h"

namespace strata::cli {
namespace {

// FP8 activations carry one fp32 scale per 128 values (the reference's act_quant blocks).
constexpr int64_t kScaleBlock = 128, kScaleBytes = 4;

int64_t fp8_row_bytes(int64_t dim) { return dim + (dim + kScaleBlock - 1) / kScaleBlock * kScaleBytes; }

// The least tokens EPLB's statistics are counted over (a small batch's own counts are noise).
constexpr int64_t kHistoryTokens = 65536;

// The frequency ranks' order over the ids (zipf_tokens).
constexpr uint64_t kRankSeed = 0x5a1f;

// uniform in [0, 1) from 53 bits: mt19937_64 is specified bit for bit, the distributions are not
double unit(std::mt19937_64& rng) { return double(rng() >> 11) * 0x1.0p-53; }

nlohmann::ordered_json load_json(const models::LoadStats& s) {
  return {{"max", s.max}, {"mean", s.mean}, {"max_over_mean", s.imbalance()}};
}

nlohmann::ordered_json plan_json(const models::DispatchPlan& plan, int64_t experts, int64_t tokens, int64_t row_bytes) {
  const models::DispatchLoad l = dispatch_load(plan, experts);
  const auto sent = plan.send_counts();
  const double rows_sent = double(std::accumulate(sent.begin(), sent.end(), int64_t(0)));
  return {{"expert_load", load_json(l.expert)},
          {"rank_load", load_json(l.rank)},
          {"rank_rows_received", load_json(l.sent)},
          {"rows_sent_per_token", rows_sent / double(tokens)},
          {"sent_bytes_per_token", rows_sent / double(tokens) * double(row_bytes)}};
}

// Distinct token ids, ascending, and how often each occurs.
struct TokenCounts {
  std::vector<int64_t> ids, counts;
};
TokenCounts token_counts(const std::vector<int64_t>& tokens) {
  std::map<int64_t, int64_t> freq;
  for (int64_t t : tokens) ++freq[t];
  TokenCounts c;
  for (const auto& [t, k] : freq) {
    c.ids.push_back(t);
    c.counts.push_back(k);
  }
  return c;
}

}  // namespace

std::vector<int64_t> zipf_tokens(int64_t vocab, double s, int64_t count, uint64_t seed) {
  if (vocab < 1 || count < 0 || !(s >= 0)) throw Error("zipf tokens: bad vocabulary, count or exponent");
  // frequency rank k (0-based) is token id perm[k], the same for every seed: streams of
  // different seeds are samples of one language, with the same frequent ids
  std::mt19937_64 shuffle(kRankSeed);
  std::vector<int64_t> perm(static_cast<size_t>(vocab));
  std::iota(perm.begin(), perm.end(), 0);
  for (int64_t i = vocab - 1; i > 0; --i) std::swap(perm[size_t(i)], perm[size_t(shuffle() % uint64_t(i + 1))]);
  std::mt19937_64 rng(seed);
  std::vector<double> cdf(static_cast<size_t>(vocab));
  double sum = 0;
  for (int64_t k = 0; k < vocab; ++k) cdf[size_t(k)] = sum += std::pow(double(k + 1), -s);
  std::vector<int64_t> out(static_cast<size_t>(count));
  for (auto& t : out) {
    const double u = unit(rng) * sum;
    const int64_t k = std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin();
    t = perm[size_t(std::min(k, vocab - 1))];
  }
  return out;
}

nlohmann::ordered_json bench_expert_parallel(const std::string& model_dir, const ExpertParallelOptions& o) {
  if (o.ranks < 1) throw Error("bench --ep-ranks: at least 1 rank");
  if (o.tokens < 1) throw Error("bench --ep-tokens: at least 1 token");
  const auto model = models::load_model(model_dir);
  const auto moe = models::moe_layers(*model);
  if (moe.empty()) throw Error("bench --ep-ranks: " + model->facts().model_type + " has no routed-expert layers");
  const int64_t E = moe.front().experts, vocab = model->vocab_size();
  const std::vector<int64_t> stream = zipf_tokens(vocab, o.zipf, o.tokens, o.seed);
  // EPLB's statistics: another stream of the same distribution, at least kHistoryTokens long
  // (replicas are placed ahead of the traffic they serve, from counts gathered over time), and the batch's own ids (the best a hash layer allows: its load is
  // known before the forward pass).
  const int64_t history_tokens = std::max(o.tokens, kHistoryTokens);
  const TokenCounts history = token_counts(zipf_tokens(vocab, o.zipf, history_tokens, o.seed + 1));
  const TokenCounts own = token_counts(stream);
  const models::ExpertPlacement shards = models::contiguous_placement(E, o.ranks);
  const int64_t shard = models::contiguous_shard(E, o.ranks, 0).count;
  const int64_t extra = o.extra_slots >= 0 ? o.extra_slots : std::max<int64_t>(1, shard / 8);

  nlohmann::ordered_json j;
  j["ranks"] = o.ranks;
  j["experts"] = E;
  j["slots_per_rank"] = shard + extra;
  j["zipf_exponent"] = o.zipf;
  j["tokens"] = o.tokens;
  j["seed"] = o.seed;
  j["history_tokens"] = history_tokens;
  j["distinct_tokens"] = int64_t(std::set<int64_t>(stream.begin(), stream.end()).size());
  nlohmann::ordered_json layers = nlohmann::ordered_json::array();
  for (const auto& m : moe) {
    nlohmann::ordered_json L;
    L["layer"] = m.layer;
    L["routing"] = m.by_token ? "hash" : "score";
    const int64_t row_bytes = fp8_row_bytes(m.hidden);
    L["fp8_row_bytes"] = row_bytes;
    L["dispatch_bytes_per_token"] = m.topk * row_bytes;  // every (token, expert) pair sent
    L["planned"] = m.by_token;  // a score-routed layer's experts come from its activations
    if (!m.by_token) {
      layers.push_back(L);
      continue;
    }
    const auto plain = models::plan_token_dispatch(shards, *model, m.layer, stream.data(), o.tokens);
    L["without_replication"] = plan_json(plain, E, o.tokens, row_bytes);
    const auto replicated = [&](const TokenCounts& c) {
      const auto ex = models::token_experts(*model, m.layer, c.ids.data(), int64_t(c.ids.size()));
      const auto load = models::weighted_expert_load(ex.data(), c.counts.data(), int64_t(c.ids.size()), m.topk, E);
      const auto replicas = models::replicate_hot_experts(shards, load, shard + extra);
      auto r = plan_json(models::plan_token_dispatch(replicas, *model, m.layer, stream.data(), o.tokens), E, o.tokens,
                         row_bytes);
      const auto used = replicas.slots_used();
      r["replicas_added"] = std::accumulate(used.begin(), used.end(), int64_t(0)) - E;
      return r;
    };
    L["with_replication"] = replicated(history);
    L["with_replication_from_batch"] = replicated(own);
    layers.push_back(L);
  }
  j["layers"] = layers;
  return j;
}

void print_expert_parallel(const nlohmann::ordered_json& j) {
  // the source document's figure for V4-Pro: hidden 7168, 6 experts per token, FP8
  const int64_t pro = 7168 * 6;
  std::printf("expert parallelism over %d ranks (%lld experts, %lld slots per rank): %lld tokens, Zipf s = %.2f, "
              "seed %llu (%lld distinct ids)\n",
              j["ranks"].get<int>(), (long long)j["experts"].get<int64_t>(), (long long)j["slots_per_rank"].get<int64_t>(),
              (long long)j["tokens"].get<int64_t>(), j["zipf_exponent"].get<double>(),
              (unsigned long long)j["seed"].get<uint64_t>(), (long long)j["distinct_tokens"].get<int64_t>());
  std::printf("  (V4-Pro for comparison: 7168 x 6 = %.1f KiB/token of FP8 values, %.1f KiB with scales)\n", pro / 1024.0,
              double(6 * fp8_row_bytes(7168)) / 1024.0);
  const auto ratio = [](const nlohmann::ordered_json& s) {
    char b[96];
    std::snprintf(b, sizeof b, "%.1f/%.1f = %.2fx", s["max"].get<double>(), s["mean"].get<double>(),
                  s["max_over_mean"].get<double>());
    return std::string(b);
  };
  for (const auto& L : j["layers"]) {
    std::printf("  layer %lld (%s-routed): dispatch %.1f KiB/token in FP8 (%lld B a row)", (long long)L["layer"].get<int64_t>(),
                L["routing"].get<std::string>().c_str(), L["dispatch_bytes_per_token"].get<double>() / 1024.0,
                (long long)L["fp8_row_bytes"].get<int64_t>());
    if (!L["planned"].get<bool>()) {
      std::printf("; experts chosen from activations: not planned here\n");
      continue;
    }
    const auto& a = L["without_replication"];
    const auto& b = L["with_replication"];
    const auto& c = L["with_replication_from_batch"];
    std::printf(", %.2f rows sent a token = %.1f KiB\n", a["rows_sent_per_token"].get<double>(),
                a["sent_bytes_per_token"].get<double>() / 1024.0);
    std::printf("    expert load max/mean %s\n", ratio(a["expert_load"]).c_str());
    std::printf("    rank load max/mean   %s without replication\n", ratio(a["rank_load"]).c_str());
    std::printf("                         %s with %lld replicas from the token counts of another stream of %lld\n",
                ratio(b["rank_load"]).c_str(), (long long)b["replicas_added"].get<int64_t>(),
                (long long)j["history_tokens"].get<int64_t>());
    std::printf("                         %s with %lld replicas from this batch's own token counts\n",
                ratio(c["rank_load"]).c_str(), (long long)c["replicas_added"].get<int64_t>());
  }
}

}  // namespace strata::cli
