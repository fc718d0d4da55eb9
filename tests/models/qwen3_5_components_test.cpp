// Qwen3.5's layers against the reference's component goldens (tests/goldens/qwen3_5/components/):
// the whole Gated DeltaNet layer (prefill from an empty state, then decode, with its conv tail and
// state), the whole gated attention layer (q | gate split, norms, partial RoPE, its K/V cache),
// the dense SwiGLU, the MoE (router with a deliberate tie, fused experts, shared expert), the MTP
// input projection and the final norm + head. Every comparison requires bit equality.
#include <gtest/gtest.h>

#include <cstring>

#include "core/numfmt.h"
#include "models/component_golden.h"
#include "models/layers/offset_rms_norm.h"
#include "models/qwen3_5/feed_forward.h"
#include "models/qwen3_5/gated_attention.h"
#include "models/qwen3_5/gated_delta_net.h"

namespace strata::qwen35 {
namespace {
using strata::testing::diff;

struct Golden : strata::testing::Golden {
  explicit Golden(const std::string& component) : strata::testing::Golden("qwen3_5", component) {}
};

std::vector<float> bf16_values(const std::vector<float>& v) {
  std::vector<float> r(v.size());
  for (size_t i = 0; i < v.size(); ++i) r[i] = round_bf16(v[i]);
  return r;
}

Config small_config(const nlohmann::json& p) {
  Config c;
  c.hidden_size = p["hidden"].get<int64_t>();
  c.rms_norm_eps = p.value("rms_norm_eps", 1e-6);
  c.num_hidden_layers = 1;
  return c;
}

TEST(Qwen35Components, GatedDeltaNetLayerPrefillThenDecode) {
  Golden g("gdn_layer");
  LOAD_OR_SKIP(g);
  const auto& p = g.meta["params"];
  Config c = small_config(p);
  c.layer_types = {"linear_attention"};
  c.linear_num_key_heads = p["linear_num_key_heads"];
  c.linear_num_value_heads = p["linear_num_value_heads"];
  c.linear_key_head_dim = p["linear_key_head_dim"];
  c.linear_value_head_dim = p["linear_value_head_dim"];
  c.linear_conv_kernel_dim = p["conv_kernel"];
  DeltaNetWeights w;
  w.qkv = g.plain("in_proj_qkv.weight");
  w.z = g.plain("in_proj_z.weight");
  w.b = g.plain("in_proj_b.weight");
  w.a = g.plain("in_proj_a.weight");
  w.out = g.plain("out_proj.weight");
  w.conv.resize(size_t(c.conv_dim() * c.linear_conv_kernel_dim));
  for (size_t i = 0; i < w.conv.size(); ++i) w.conv[i] = bf16_to_f32(g.bf16("conv1d.weight")[i]);
  w.a_log = bf16_values(g.f("A_log"));
  w.dt_bias = bf16_values(g.f("dt_bias"));
  w.norm = g.bf16("norm.weight");
  SequenceState st = new_state(c, 0);
  const int64_t d = c.hidden_size, P = p["prefill"], S = p["seq"];
  auto x = g.f("x");
  std::vector<float> out(size_t(S * d));
  gated_delta_net(c, w, {Segment{&st.layers[0], 0, P, nullptr}}, x.data(), P, out.data());
  for (int64_t t = P; t < S; ++t)
    gated_delta_net(c, w, {Segment{&st.layers[0], t, 1, nullptr}}, x.data() + t * d, 1, out.data() + t * d);
  EXPECT_EQ(diff(out.data(), g.f("out_prefill"), "gdn prefill").mismatches, 0);
  EXPECT_EQ(diff(out.data() + P * d, g.f("out_decode"), "gdn decode").mismatches, 0);
  std::vector<float> tail(st.layers[0].conv.size());
  for (size_t i = 0; i < tail.size(); ++i) tail[i] = bf16_to_f32(st.layers[0].conv[i]);
  EXPECT_EQ(diff(tail.data(), g.f("conv_tail_after"), "gdn conv tail").mismatches, 0);
  EXPECT_EQ(diff(st.layers[0].state.data(), g.f("state_after"), "gdn state").mismatches, 0);
}

TEST(Qwen35Components, GatedAttentionLayerPrefillThenDecode) {
  Golden g("attention_gated");
  LOAD_OR_SKIP(g);
  const auto& p = g.meta["params"];
  Config c = small_config(p);
  c.layer_types = {"full_attention"};
  c.num_attention_heads = p["heads"];
  c.num_key_value_heads = p["kv_heads"];
  c.head_dim = p["head_dim"];
  c.partial_rotary_factor = p["partial_rotary_factor"];
  c.rope_theta = p["rope_theta"];
  AttentionWeights w{g.plain("q_proj.weight"), g.plain("k_proj.weight"), g.plain("v_proj.weight"),
                     g.plain("o_proj.weight"), g.bf16("q_norm.weight"), g.bf16("k_norm.weight")};
  const models::RotateHalfRope rope(c.rotary_dim(), c.rope_theta);
  SequenceState st = new_state(c, 0);
  const int64_t d = c.hidden_size, P = p["prefill"], S = p["seq"];
  auto x = g.f("x");
  std::vector<float> out(size_t(S * d));
  gated_attention(c, w, rope, {Segment{&st.layers[0], 0, P, nullptr}}, x.data(), P, out.data());
  for (int64_t t = P; t < S; ++t)
    gated_attention(c, w, rope, {Segment{&st.layers[0], t, 1, nullptr}}, x.data() + t * d, 1, out.data() + t * d);
  EXPECT_EQ(diff(out.data(), g.f("out_prefill"), "attention prefill").mismatches, 0);
  EXPECT_EQ(diff(out.data() + P * d, g.f("out_decode"), "attention decode").mismatches, 0);
  const int64_t kvd = c.num_key_value_heads * c.head_dim;
  std::vector<float> k(size_t(S * kvd)), v(size_t(S * kvd));
  for (int64_t t = 0; t < S; ++t) {
    const auto* e = reinterpret_cast<const uint16_t*>(st.layers[0].kv.entry(t));
    for (int64_t i = 0; i < kvd; ++i) k[size_t(t * kvd + i)] = bf16_to_f32(e[i]), v[size_t(t * kvd + i)] = bf16_to_f32(e[kvd + i]);
  }
  EXPECT_EQ(diff(k.data(), g.f("k_cache"), "k cache").mismatches, 0);
  EXPECT_EQ(diff(v.data(), g.f("v_cache"), "v cache").mismatches, 0);
}

TEST(Qwen35Components, DenseSwiglu) {
  Golden g("mlp_swiglu");
  LOAD_OR_SKIP(g);
  SwigluWeights w{g.plain("gate_proj.weight"), g.plain("up_proj.weight"), g.plain("down_proj.weight")};
  auto x = g.f("x");
  std::vector<float> out(x.size());
  swiglu_mlp(w, x.data(), 5, out.data());
  EXPECT_EQ(diff(out.data(), g.f("out"), "swiglu").mismatches, 0);
}

TEST(Qwen35Components, MoeWithARouterTie) {
  Golden g("moe");
  LOAD_OR_SKIP(g);
  const auto& p = g.meta["params"];
  Config c;
  c.hidden_size = 128;
  c.num_experts = p["experts"];
  c.num_experts_per_tok = p["topk"];
  c.moe_intermediate_size = p["moe_intermediate"];
  c.shared_expert_intermediate_size = p["shared_intermediate"];
  const int64_t E = c.num_experts, I = c.moe_intermediate_size, d = c.hidden_size;
  MoeWeights w;
  w.router = g.plain("gate.weight");
  const uint16_t* gu = g.bf16("experts.gate_up_proj");
  const uint16_t* dn = g.bf16("experts.down_proj");
  for (int64_t e = 0; e < E; ++e)
    w.experts.push_back({{kernels::WeightFormat::bf16, gu + e * 2 * I * d, nullptr, I, d},
                         {kernels::WeightFormat::bf16, gu + e * 2 * I * d + I * d, nullptr, I, d},
                         {kernels::WeightFormat::bf16, dn + e * d * I, nullptr, d, I}});
  w.shared = {g.plain("shared_expert.gate_proj.weight"), g.plain("shared_expert.up_proj.weight"),
              g.plain("shared_expert.down_proj.weight")};
  w.shared_gate = g.plain("shared_expert_gate.weight");
  auto x = g.f("x");
  std::vector<int64_t> ids;
  std::vector<float> wts, probs;
  moe_route(c, w, x.data(), 8, ids, wts, &probs);
  EXPECT_EQ(diff(probs.data(), g.f("router_probs"), "router probs").mismatches, 0);
  EXPECT_EQ(diff(wts.data(), g.f("route_weights"), "route weights").mismatches, 0);
  EXPECT_EQ(ids, g.a("route_indices").to_i64());
  std::vector<float> out(x.size());
  moe_mlp(c, w, x.data(), 8, out.data());
  EXPECT_EQ(diff(out.data(), g.f("out"), "moe").mismatches, 0);
}

TEST(Qwen35Components, MtpInputProjection) {
  Golden g("mtp_input");
  LOAD_OR_SKIP(g);
  const int64_t d = 128;
  const float eps = g.meta["params"]["eps"].get<float>();
  auto e = g.f("embedding"), h = g.f("hidden");
  std::vector<float> cat(size_t(4 * 2 * d)), out(size_t(4 * d));
  for (int64_t r = 0; r < 4; ++r) {
    models::offset_rms_norm(e.data() + r * d, g.bf16("pre_fc_norm_embedding.weight"), d, eps, cat.data() + r * 2 * d);
    models::offset_rms_norm(h.data() + r * d, g.bf16("pre_fc_norm_hidden.weight"), d, eps, cat.data() + r * 2 * d + d);
  }
  kernels::linear(g.plain("fc.weight"), cat.data(), 4, out.data(), true);
  EXPECT_EQ(diff(out.data(), g.f("out"), "mtp input").mismatches, 0);
}

TEST(Qwen35Components, FinalNormAndHead) {
  Golden g("final_norm_head");
  LOAD_OR_SKIP(g);
  const int64_t d = 128;
  auto h = g.f("h");
  std::vector<float> n(h.size()), logits(size_t(3 * 64));
  for (int64_t r = 0; r < 3; ++r) models::offset_rms_norm(h.data() + r * d, g.bf16("norm.weight"), d, 1e-6f, n.data() + r * d);
  EXPECT_EQ(diff(n.data(), g.f("normed"), "final norm").mismatches, 0);
  kernels::linear(g.plain("lm_head.weight"), n.data(), 3, logits.data(), true);
  EXPECT_EQ(diff(logits.data(), g.f("logits"), "head").mismatches, 0);
}

}  // namespace
}  // namespace strata::qwen35
