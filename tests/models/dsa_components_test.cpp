// The DSA family's mechanisms against the reference's component goldens
// (tests/goldens/dsa/components/, reference/make_dsa_component_goldens.py), bit for bit: RoPE
// (YaRN and plain tables; interleaved for the MLA and GLM-5's indexer, half-split for
// DeepSeek-V3.2's), the indexer's LayerNorm, the 656-byte latent entry, the lightning indexer
// (its queries, 132-byte key entries, scores and top-k with ties) and the group-limited router.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "cache/entry_array.h"
#include "core/numerics.h"
#include "kernels/hadamard.h"
#include "kernels/linear.h"
#include "kernels/rope.h"
#include "models/component_golden.h"
#include "models/dsa/cache_entries.h"
#include "models/dsa/lightning_indexer.h"
#include "models/dsa/moe.h"

namespace strata::dsa {
namespace {

using testing::diff;
using testing::Golden;

kernels::RopeTable yarn_table() { return kernels::RopeTable(64, 10000.0, {40.0, 4096, 32.0, 1.0}); }
kernels::RopeTable plain_table() { return kernels::RopeTable(64, 10000.0, {}); }

TEST(DsaComponents, Rope) {
  Golden g("dsa", "rope");
  LOAD_OR_SKIP(g);
  const auto pos = g.a("positions").to_i64();
  const int64_t n = int64_t(pos.size());
  for (auto [table, tag] : {std::pair{yarn_table(), std::string("yarn")}, std::pair{plain_table(), std::string("plain")}}) {
    EXPECT_EQ(diff(table.freqs().data(), g.f("freqs_" + tag), ("freqs_" + tag).c_str()).mismatches, 0);
    std::vector<float> cs(size_t(n * 32)), sn(size_t(n * 32));
    for (int64_t t = 0; t < n; ++t) table.angles(pos[size_t(t)], cs.data() + t * 32, sn.data() + t * 32);
    EXPECT_EQ(diff(cs.data(), g.f("cos_" + tag), ("cos_" + tag).c_str()).mismatches, 0);
    EXPECT_EQ(diff(sn.data(), g.f("sin_" + tag), ("sin_" + tag).c_str()).mismatches, 0);
    for (bool interleaved : {true, false}) {
      std::vector<float> x = g.f("x");  // [n][3][64]
      for (int64_t t = 0; t < n; ++t)
        for (int64_t h = 0; h < 3; ++h) indexer_rope(x.data() + (t * 3 + h) * 64, 64, interleaved, table, pos[size_t(t)]);
      const std::string want = std::string(interleaved ? "out_interleaved_" : "out_rotate_half_") + tag;
      EXPECT_EQ(diff(x.data(), g.f(want), want.c_str()).mismatches, 0);
    }
  }
  // The indexer's [rope | nope] vectors: V3.2 half-split on the YaRN table, GLM-5 interleaved on the plain one.
  for (auto [interleaved, tag] : {std::pair{false, std::string("v32")}, std::pair{true, std::string("glm5")}}) {
    const auto table = interleaved ? plain_table() : yarn_table();
    std::vector<float> x = g.f("x_index");  // [n][2][128]
    for (int64_t t = 0; t < n; ++t)
      for (int64_t h = 0; h < 2; ++h) indexer_rope(x.data() + (t * 2 + h) * 128, 64, interleaved, table, pos[size_t(t)]);
    EXPECT_EQ(diff(x.data(), g.f("out_index_" + tag), ("out_index_" + tag).c_str()).mismatches, 0);
  }
}

TEST(DsaComponents, LayerNorm) {
  Golden g("dsa", "layer_norm");
  LOAD_OR_SKIP(g);
  const auto x = g.f("x"), w = g.f("weight"), b = g.f("bias");
  std::vector<float> out(x.size());
  for (size_t r = 0; r < x.size() / 128; ++r) layer_norm(x.data() + r * 128, w.data(), b.data(), 128, 1e-6f, out.data() + r * 128);
  EXPECT_EQ(diff(out.data(), g.f("out"), "layer_norm").mismatches, 0);
}

TEST(DsaComponents, LatentEntry) {
  Golden g("dsa", "latent_quant");
  LOAD_OR_SKIP(g);
  const auto latent = g.f("latent"), k_pe = g.f("k_pe");
  const NpyArray& want = g.a("entry");
  const int64_t rows = want.shape[0], bytes = want.shape[1];
  ASSERT_EQ(bytes, 656);
  std::vector<uint8_t> entry(static_cast<size_t>(bytes));
  std::vector<float> dq(size_t(rows * 576));
  std::vector<float> lat_dq(size_t(rows * 512));
  for (int64_t r = 0; r < rows; ++r) {
    encode_latent(latent.data() + r * 512, 512, k_pe.data() + r * 64, 64, entry.data());
    EXPECT_EQ(std::memcmp(entry.data(), want.as<uint8_t>() + r * bytes, size_t(bytes)), 0) << "row " << r;
    decode_latent(entry.data(), 512, 64, dq.data() + r * 576);
    std::copy_n(dq.data() + r * 576, 512, lat_dq.data() + r * 512);
  }
  EXPECT_EQ(diff(lat_dq.data(), g.f("latent_dq"), "latent_dq").mismatches, 0);
}

TEST(DsaComponents, LightningIndexer) {
  Golden g("dsa", "indexer");
  LOAD_OR_SKIP(g);
  const int64_t H = 4, D = 128, topk = g.meta["params"]["index_topk"].get<int64_t>();
  const auto qpos = g.a("query_positions").to_i64();
  const int64_t nq = int64_t(qpos.size()), nk = g.a("k_pre").shape[0];
  int64_t fast_differs = 0;  // fast scores that are not the exact ones: the golden tells the scans apart
  for (auto [interleaved, tag] : {std::pair{false, std::string("v32")}, std::pair{true, std::string("glm5")}}) {
    const auto table = interleaved ? plain_table() : yarn_table();
    // Keys at positions 0..nk-1: RoPE, then the 132-byte entries (Hadamard, FP8).
    std::vector<float> k = g.f("k_pre");
    cache::EntryArray keys;
    keys.init(132);
    for (int64_t s = 0; s < nk; ++s) {
      indexer_rope(k.data() + s * D, 64, interleaved, table, s);
      index_key_entry(k.data() + s * D, D, keys.append());
      EXPECT_EQ(std::memcmp(keys.entry(s), g.a("k_entry_" + tag).as<uint8_t>() + s * 132, 132), 0) << tag << " key " << s;
    }
    for (int64_t s = 0; s < nk; ++s) kernels::hadamard(k.data() + s * D, D, true);  // k_rot: after RoPE and Hadamard
    EXPECT_EQ(diff(k.data(), g.f("k_rot_" + tag), ("k_rot_" + tag).c_str()).mismatches, 0);
    std::vector<float> q = g.f("q_pre");
    const auto wp = g.f("wp_lin");
    const auto exact_scores = g.f("scores_" + tag);
    std::vector<float> w_all;
    for (int64_t t = 0; t < nq; ++t) {
      const IndexerQuery iq = indexer_query(q.data() + t * H * D, wp.data() + t * H, H, D, 64, interleaved, table, qpos[size_t(t)]);
      w_all.insert(w_all.end(), iq.w.begin(), iq.w.begin() + H);
      const int64_t visible = qpos[size_t(t)] + 1;
      // Both profiles: the fast one's dots are fp32 steps over the column pairs.
      for (auto [numerics, prefix] : {std::pair{Numerics::exact, ""}, std::pair{Numerics::fast, "fast_"}}) {
        ScopedNumerics profile(numerics);
        const auto want_scores = g.f(prefix + std::string("scores_") + tag);
        const auto want_sel = g.a(prefix + std::string("selected_") + tag).to_i64();
        const auto sc = indexer_scores(iq, keys, 0, visible);
        for (int64_t s = 0; s < visible; ++s) {
          EXPECT_EQ(sc[size_t(s)], want_scores[size_t(t * nk + s)]) << prefix << tag << " query " << t << " key " << s;
          fast_differs += numerics == Numerics::fast && want_scores[size_t(t * nk + s)] != exact_scores[size_t(t * nk + s)];
        }
        const auto sel = indexer_select(iq, keys, 0, visible, topk);
        std::vector<int64_t> want;
        for (int64_t i = 0; i < topk; ++i)
          if (want_sel[size_t(t * topk + i)] >= 0) want.push_back(want_sel[size_t(t * topk + i)]);
        EXPECT_EQ(std::vector<int64_t>(sel.begin(), sel.end()), want) << prefix << tag << " query " << t;
      }
    }
    EXPECT_EQ(diff(q.data(), g.f("q_rot_" + tag), ("q_rot_" + tag).c_str()).mismatches, 0);
    EXPECT_EQ(diff(w_all.data(), g.f("w_" + tag), ("w_" + tag).c_str()).mismatches, 0);
  }
  EXPECT_GT(fast_differs, 0);
}

TEST(DsaComponents, GroupLimitedRouter) {
  Golden g("dsa", "router");
  LOAD_OR_SKIP(g);
  const auto& p = g.meta["params"];
  const int64_t E = p["experts"], K = p["topk"], d = p["hidden"];
  const auto x = g.f("x");
  const int64_t rows = int64_t(x.size()) / d;
  MoeWeights w;
  w.bias = g.f("e_score_correction_bias");
  const kernels::LinearWeight gate = g.plain("gate.weight");
  for (auto [tag, groups] : {std::pair{std::string("grouped"), p["grouped"]}, std::pair{std::string("n_group1"), p["n_group1"]}}) {
    std::vector<float> logits(size_t(rows * E));
    kernels::linear_exact(gate, x.data(), rows, logits.data(), false);
    EXPECT_EQ(diff(logits.data(), g.f("logits_" + tag), ("logits_" + tag).c_str()).mismatches, 0);
    for (bool norm : {true, false}) {
      Config c;
      c.n_routed_experts = E;
      c.num_experts_per_tok = K;
      c.n_group = groups["n_group"];
      c.topk_group = groups["topk_group"];
      c.routed_scaling_factor = p["routed_scaling_factor"];
      c.norm_topk_prob = norm;
      const auto want_idx = g.a("indices_" + tag).to_i64();
      const auto want_w = g.f((norm ? "weights_" : "weights_nonorm_") + tag);
      for (int64_t r = 0; r < rows; ++r) {
        const Routing rt = route(c, w, logits.data() + r * E);
        for (int64_t k = 0; k < K; ++k) {  // the golden lists by score; route() by expert id
          const int64_t e = want_idx[size_t(r * K + k)];
          const auto it = std::find(rt.experts.begin(), rt.experts.end(), e);
          ASSERT_NE(it, rt.experts.end()) << tag << " row " << r << " expert " << e;
          EXPECT_EQ(rt.weights[size_t(it - rt.experts.begin())], want_w[size_t(r * K + k)]) << tag << " row " << r;
        }
      }
    }
  }
}

// An FP8 linear of the golden in the checkpoint's form (e4m3 codes + fp32 power-of-two
// weight_scale_inv), as the engine binds it: the scales as e8m0 exponent bytes.
kernels::LinearWeight fp8_linear(Golden& g, const std::string& stem, std::vector<std::vector<uint8_t>>& keep) {
  const NpyArray& w = g.a(stem + ".weight");
  const auto s = g.f(stem + ".weight_scale_inv");
  auto& e = keep.emplace_back();
  for (float v : s) e.push_back(uint8_t(std::ilogb(v) + 127));
  return {kernels::WeightFormat::fp8, w.data.data(), e.data(), w.shape[0], w.shape[1]};
}

TEST(DsaComponents, MoeWithSharedExpert) {
  Golden g("dsa", "moe");
  LOAD_OR_SKIP(g);
  const auto& p = g.meta["params"];
  Config c;
  c.hidden_size = p["hidden"];
  c.n_routed_experts = p["experts"];
  c.num_experts_per_tok = p["topk"];
  c.n_shared_experts = p["n_shared_experts"];
  c.routed_scaling_factor = p["routed_scaling_factor"];
  std::vector<std::vector<uint8_t>> keep;
  MoeWeights w;
  w.gate = g.plain("gate.weight");
  w.bias = g.f("gate.e_score_correction_bias");
  auto swiglu = [&](const std::string& pre) {
    return SwigluWeights{fp8_linear(g, pre + "gate_proj", keep), fp8_linear(g, pre + "up_proj", keep),
                         fp8_linear(g, pre + "down_proj", keep)};
  };
  for (int64_t e = 0; e < c.n_routed_experts; ++e) w.experts.push_back(swiglu("experts." + std::to_string(e) + "."));
  w.has_shared = true;
  w.shared = swiglu("shared_experts.");
  const auto x = g.f("x");
  const int64_t rows = int64_t(x.size()) / c.hidden_size;
  std::vector<float> shared(x.size()), out(x.size());
  swiglu_mlp(w.shared, x.data(), rows, shared.data());
  EXPECT_EQ(diff(shared.data(), g.f("shared_out"), "shared_out").mismatches, 0);
  moe_forward(c, w, x.data(), rows, out.data());
  EXPECT_EQ(diff(out.data(), g.f("out"), "moe out").mismatches, 0);
}

}  // namespace
}  // namespace strata::dsa
