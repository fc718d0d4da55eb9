// `strata bench` end to end through the binary, on a small random checkpoint: the long-context
// steps run from a state placed in a cache pool (as the engine places a request), and their
// JSON rows say so with the pool's bytes for that context; --profile breaks the decode steps'
// products down by weight shape.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "cache/cache_spec.h"
#include "cli/bench_expert_parallel.h"
#include "kernels/parallel.h"
#include "models/deepseek_v4/cache_layout.h"
#include "models/deepseek_v4/indexer_scratch.h"
#include "models/deepseek_v4/presets.h"
#include "run_command.h"
#include "tiny_checkpoint.h"

namespace strata {
namespace {
using test::run_strata;
using test::shell_quote;

int64_t align64(int64_t v) { return (v + 63) / 64 * 64; }

TEST(Bench, LongContextStepsRunFromAPooledState) {
  test::TinyCheckpoint tiny("bench", 4);
  auto r = run_strata("bench --model " + shell_quote(tiny.dir) +
                      " --skip-probes --json --prompt-tokens 4 --decode-tokens 2 --context 256 1024 --context-steps 3");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.contains("long_context")) << r.out;
  const auto& rows = j["long_context"];
  ASSERT_EQ(rows.size(), 2u);
  const auto layout = dsv4::cache_layout(dsv4::preset_config("flash-tiny"));
  for (size_t i = 0; i < rows.size(); ++i) {
    const int64_t ctx = rows[i]["context"].get<int64_t>();
    EXPECT_EQ(ctx, i == 0 ? 256 : 1024);
    EXPECT_GT(rows[i]["step_ms"].get<double>(), 0.0);
    // the pool holds the state at its context plus the warm-up and the timed steps: the ledger's bytes
    EXPECT_EQ(rows[i]["pool_bytes"].get<int64_t>(), layout.bytes_for(ctx + 1 + 3)) << ctx;
    // and the indexer's scratch in the pool's workspace, a part per thread
    const int64_t scratch = dsv4::indexer_scratch_bytes(dsv4::preset_config("flash-tiny"), ctx + 1 + 3, kernels::num_threads());
    EXPECT_EQ(rows[i]["indexer_scratch_bytes"].get<int64_t>(), align64(scratch)) << ctx;
    EXPECT_GT(scratch, 0);
  }
}

// A DSA model's long-context rows time its indexer's scan of every index key (the part of the
// step that grows with the context), and the pool holds its latent and index-key blocks.
TEST(Bench, DsaLongContextReportsTheIndexerScan) {
  const std::string dir = (std::filesystem::temp_directory_path() / ("strata_bench_dsa_" + std::to_string(::getpid()))).string();
  auto r = run_strata("make-model --preset deepseek-v3.2-tiny --seed 2 --out " + shell_quote(dir));
  ASSERT_EQ(r.code, 0) << r.err;
  r = run_strata("bench --model " + shell_quote(dir) +
                 " --skip-probes --json --prompt-tokens 4 --decode-tokens 2 --context 1024 --context-steps 2");
  std::filesystem::remove_all(dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& row = j["long_context"][0];
  EXPECT_EQ(row["context"].get<int64_t>(), 1024);
  ASSERT_TRUE(row["regions_ms"].contains("indexer scan")) << row.dump();
  EXPECT_GT(row["regions_ms"]["indexer scan"].get<double>(), 0.0);
  EXPECT_LT(row["regions_ms"]["indexer scan"].get<double>(), row["step_ms"].get<double>());
  // 3 layers + 0 MTP: (260 + 132) B a token a layer, in 64-token blocks, for 1024 + 1 + 2 tokens
  EXPECT_EQ(row["pool_bytes"].get<int64_t>(), 3 * (260 + 132) * 64 * 17);
}

// Every product of a decode step is in the profile: the head once a token, and the weight bytes
// the rows account for are the step's (the traffic the roofline counts) less what no product
// reads (one embedding row, the caches, the mHC / norm vectors, tid2eid rows).
TEST(Bench, ProfileBreaksDecodeDownByWeightShape) {
  test::TinyCheckpoint tiny("bench_profile", 4);
  auto r = run_strata("bench --model " + shell_quote(tiny.dir) + " --skip-probes --json --prompt-tokens 4 --decode-tokens 3 --profile");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& d = j["decode"];
  ASSERT_TRUE(d.contains("profile")) << r.out;
  const auto cfg = dsv4::preset_config("flash-tiny");
  bool head = false;
  double bytes = 0, ms = 0;
  for (const auto& row : d["profile"]) {
    EXPECT_EQ(row["rows"].get<int64_t>(), 1);
    EXPECT_GT(row["calls_per_step"].get<double>(), 0.0);
    EXPECT_GT(row["ms_per_step"].get<double>(), 0.0);
    if (row["out"].get<int64_t>() == cfg.vocab_size && row["in"].get<int64_t>() == cfg.hidden_size) {
      head = true;
      EXPECT_DOUBLE_EQ(row["calls_per_step"].get<double>(), 1.0);
    }
    ms += row["ms_per_step"].get<double>();
    bytes += row["calls_per_step"].get<double>() * row["weight_bytes"].get<double>();
  }
  EXPECT_TRUE(head);
  EXPECT_NEAR(d["profiled_ms_per_token"].get<double>(), ms, 1e-9 * std::max(1.0, ms));
  const double step = d["bytes_per_token"].get<double>();
  EXPECT_LT(bytes, step);
  EXPECT_GT(bytes, 0.9 * step);
  // the prefill's products: all 4 prompt rows at once, the head on the last position only
  const auto& p = j["prefill"];
  ASSERT_TRUE(p.contains("profile")) << r.out;
  int heads = 0;
  for (const auto& row : p["profile"]) {
    if (row["out"].get<int64_t>() != cfg.vocab_size) continue;
    ++heads;
    EXPECT_EQ(row["rows"].get<int64_t>(), 1);
    EXPECT_DOUBLE_EQ(row["calls_per_step"].get<double>(), 1.0);
  }
  EXPECT_EQ(heads, 1);
  EXPECT_GT(p["profiled_ms"].get<double>(), 0.0);
}

// With --batches, the engine's decode steps of each batch: the head once a step, over all rows.
TEST(Bench, ProfileOfBatchedDecodeSteps) {
  test::TinyCheckpoint tiny("bench_profile_batch", 4);
  auto r = run_strata("bench --model " + shell_quote(tiny.dir) +
                      " --skip-probes --json --prompt-tokens 4 --decode-tokens 4 --batches 1 3 --profile");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto cfg = dsv4::preset_config("flash-tiny");
  ASSERT_EQ(j["batched_decode"].size(), 2u);
  for (const auto& b : j["batched_decode"]) {
    ASSERT_TRUE(b.contains("profile")) << r.out;
    int heads = 0;
    for (const auto& row : b["profile"])
      if (row["out"].get<int64_t>() == cfg.vocab_size) {
        ++heads;
        EXPECT_EQ(row["rows"].get<int64_t>(), b["batch"].get<int64_t>());
        EXPECT_NEAR(row["calls_per_step"].get<double>(), 1.0, 1e-9);
      }
    EXPECT_EQ(heads, 1) << b.dump();
    EXPECT_GT(b["profiled_ms_per_step"].get<double>(), 0.0);
  }
}

// --lockstep: --batches by a fixed loop of batched passes (what runs under mpirun), in one
// process here: one row per batch size, one rank, no exchange.
TEST(Bench, LockstepBatchesRunWithoutTheEngine) {
  test::TinyCheckpoint tiny("bench_lockstep", 4);
  auto r = run_strata("bench --model " + shell_quote(tiny.dir) +
                      " --skip-probes --json --prompt-tokens 5 --decode-tokens 3 --batches 1,4 --lockstep");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["batched_decode"].size(), 2u);
  for (const auto& b : j["batched_decode"]) {
    EXPECT_EQ(b["mode"], "lockstep");
    EXPECT_EQ(b["ranks"], 1);
    EXPECT_GT(b["tokens_per_s"].get<double>(), 0.0);
    EXPECT_EQ(b["exchange_share"].get<double>(), 0.0);
  }
  EXPECT_EQ(j["batched_decode"][1]["batch"], 4);
  r = run_strata("bench --model " + shell_quote(tiny.dir) + " --skip-probes --prompt-tokens 5 --decode-tokens 3 --batches 0 --lockstep");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("at least 1"), std::string::npos) << r.err;
}

// --json-schema: the schema runs end in JSON of the schema, and the grammar's work is reported
// (its numbers are the benchmark's, not checked here).
TEST(Bench, StructuredOutputCostAgainstFreeDecoding) {
  test::TinyCheckpoint tiny("bench_schema", 4);
  const std::string schema = tiny.dir + "/schema.json";
  std::ofstream(schema) << R"({"type":"object","properties":{"ok":{"type":"boolean"},"n":{"enum":[1,2,3]}},
                               "required":["ok","n"]})";
  auto r = run_strata("bench --model " + shell_quote(tiny.dir) +
                      " --skip-probes --json --prompt-tokens 4 --decode-tokens 64 --json-schema " + shell_quote(schema));
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out)["structured_output"];
  EXPECT_TRUE(j["complete"].get<bool>()) << j.dump();
  EXPECT_TRUE(j["output_parses"].get<bool>()) << j.dump();
  EXPECT_GT(j["grammar_states"].get<int64_t>(), 0);
  for (const char* k : {"cold_ms_per_step", "warm_ms_per_step", "warm_pct_of_free_step", "grammar_compile_ms"})
    EXPECT_TRUE(j[k].is_number()) << k;
  auto bad = run_strata("bench --model " + shell_quote(tiny.dir) +
                        " --skip-probes --prompt-tokens 4 --decode-tokens 4 --json-schema " + shell_quote(tiny.dir + "/none.json"));
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.err.find("cannot open"), std::string::npos) << bad.err;
}

// --ep-ranks: the hash layers (0-2 of flash-tiny) are planned from the Zipf stream's ids, the
// score-routed ones listed as not planned; replicas from the batch's own counts lower the
// busiest rank's load, and the same options print the same report.
TEST(Bench, ExpertParallelPlanOfTheHashLayers) {
  test::TinyCheckpoint tiny("bench_ep", 4);
  const std::string cmd = "bench --model " + shell_quote(tiny.dir) + " --json --ep-ranks 3 --ep-tokens 3000";
  auto r = run_strata(cmd);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out)["expert_parallel"];
  const auto c = dsv4::preset_config("flash-tiny");
  ASSERT_EQ(int64_t(j["layers"].size()), c.num_hidden_layers) << j.dump();
  auto ru = run_strata(cmd + " --ep-zipf 0");
  ASSERT_EQ(ru.code, 0) << ru.err;
  const auto uniform = nlohmann::json::parse(ru.out)["expert_parallel"];
  EXPECT_EQ(j["slots_per_rank"].get<int64_t>(), 6 + 1);  // 16 experts over 3: shards of 6, 5, 5; one spare
  for (const auto& L : j["layers"]) {
    const bool hash = L["layer"].get<int64_t>() < c.num_hash_layers;
    EXPECT_EQ(L["planned"].get<bool>(), hash) << L.dump();
    // FP8 rows of hidden_size bytes and an fp32 scale per 128, one per routed expert
    EXPECT_EQ(L["dispatch_bytes_per_token"].get<int64_t>(), c.num_experts_per_tok * (c.hidden_size + c.hidden_size / 128 * 4));
    if (!hash) continue;
    const auto& a = L["without_replication"];
    EXPECT_DOUBLE_EQ(a["expert_load"]["mean"].get<double>(), 3000.0 * double(c.num_experts_per_tok) / 16);
    const auto& u = uniform["layers"][L["layer"].get<size_t>()]["without_replication"];
    EXPECT_GT(a["expert_load"]["max_over_mean"].get<double>(), u["expert_load"]["max_over_mean"].get<double>())
        << "Zipf ids load their experts more unevenly than uniform ids";
    // replicas placed from another stream's counts may miss this batch's peak; from the batch's
    // own counts they lower it
    for (const char* k : {"with_replication", "with_replication_from_batch"}) {
      const auto& b = L[k];
      EXPECT_LE(b["replicas_added"].get<int64_t>(), 3 * 7 - 16) << k << ": the spare slots of 3 ranks of 7";
      EXPECT_DOUBLE_EQ(b["rank_load"]["mean"].get<double>(), a["rank_load"]["mean"].get<double>()) << k;
      EXPECT_EQ(b["expert_load"], a["expert_load"]) << k;
    }
    const auto& b = L["with_replication_from_batch"];
    EXPECT_GT(b["replicas_added"].get<int64_t>(), 0);
    EXPECT_LT(b["rank_load"]["max"].get<double>(), a["rank_load"]["max"].get<double>()) << L.dump();
    // a token's row goes to each of the 1-3 ranks that hold its experts, once
    EXPECT_GE(a["rows_sent_per_token"].get<double>(), 1.0);
    EXPECT_LE(a["rows_sent_per_token"].get<double>(), 3.0);
  }
  auto again = run_strata(cmd);
  EXPECT_EQ(again.out, r.out) << "the stream and the plans depend on the options alone";
  auto text = run_strata("bench --model " + shell_quote(tiny.dir) + " --ep-ranks 2 --ep-zipf 1.2 --ep-tokens 500");
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("layer 3 (score-routed)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("without replication"), std::string::npos) << text.out;
  EXPECT_NE(run_strata("bench --model " + shell_quote(tiny.dir) + " --ep-zipf 1.2").code, 0) << "--ep-zipf needs --ep-ranks";
}

// The bench's token stream: Zipf frequencies (the top id's share is 1 / sum k^-s), the same for
// a seed, another for another seed.
TEST(Bench, ZipfTokenStream) {
  const int64_t vocab = 129280, n = 40000;
  const double s = 1.1;
  const auto a = cli::zipf_tokens(vocab, s, n, 9);
  EXPECT_EQ(a, cli::zipf_tokens(vocab, s, n, 9));
  const auto b = cli::zipf_tokens(vocab, s, n, 10);
  EXPECT_NE(a, b);
  std::map<int64_t, int64_t> counts;
  for (int64_t t : a) {
    ASSERT_GE(t, 0);
    ASSERT_LT(t, vocab);
    ++counts[t];
  }
  int64_t top = 0;
  for (const auto& [t, k] : counts) top = std::max(top, k);
  double h = 0;
  for (int64_t k = 1; k <= vocab; ++k) h += std::pow(double(k), -s);
  EXPECT_NEAR(double(top) / double(n), 1.0 / h, 0.01);
  // another seed samples the same language: its most frequent id is the same
  const auto most = [](const std::map<int64_t, int64_t>& c) {
    return std::max_element(c.begin(), c.end(), [](const auto& x, const auto& y) { return x.second < y.second; })->first;
  };
  std::map<int64_t, int64_t> counts_b;
  for (int64_t t : b) ++counts_b[t];
  EXPECT_EQ(most(counts), most(counts_b));
  EXPECT_GT(top, 0);
  const auto flat = cli::zipf_tokens(vocab, 0.0, n, 9);  // s = 0: uniform, no id much above n / vocab
  std::map<int64_t, int64_t> fc;
  for (int64_t t : flat) ++fc[t];
  for (const auto& [t, k] : fc) EXPECT_LT(k, 10);
}

}  // namespace
}  // namespace strata
