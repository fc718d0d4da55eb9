// Every DeepSeek-V4 mechanism against the per-component goldens of reference/
// (tests/goldens/deepseek_v4/components/<component>/, written by
// reference/make_component_goldens.py). The reference rounds fp64 products/sums once to fp32;
// strata's canonical dot does the same (kernels/dot.h), so every component is expected bit for
// bit. The reference's RMS statistics (rms_norm, the per-head q rescale, the mHC mixes) are an
// fp64 sum of squares rounded once to fp32 (reference/README.md), as strata's sum_squares, so
// there is no slack anywhere: every comparison below requires 0 mismatches.
// Measured: all 18 components bit-exact (max |diff| = 0 everywhere, mHC included).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <cstring>
#include <map>
#include <numeric>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/numfmt.h"
#include "kernels/parallel.h"
#include "io/json_file.h"
#include "io/npy.h"
#include "models/component_golden.h"
#include "kernels/hadamard.h"
#include "kernels/linear.h"
#include "kernels/quant.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/sparse_attention.h"
#include "models/deepseek_v4/attention.h"
#include "models/deepseek_v4/compressor.h"
#include "models/deepseek_v4/indexer.h"
#include "models/deepseek_v4/mhc.h"
#include "models/deepseek_v4/moe.h"

namespace strata::dsv4 {
namespace {

namespace fs = std::filesystem;
using kernels::LinearWeight;
using kernels::WeightFormat;

// The DeepSeek-V4 components of tests/goldens/deepseek_v4/components/.
struct Golden : testing::Golden {
  explicit Golden(const std::string& component) : testing::Golden("deepseek_v4", component) {}
};
using testing::Diff;
using testing::diff;

kernels::RopeTable yarn_rope(const nlohmann::json& r) {
  return kernels::RopeTable(64, r["theta"].get<double>(),
                            kernels::YarnParams{r["factor"].get<double>(), r["original_seq_len"].get<int64_t>(),
                                                r["beta_fast"].get<double>(), r["beta_slow"].get<double>()});
}

// ---------------------------------------------------------------- formats and small kernels

TEST(Dsv4Golden, ActQuantFp8IsExact) {
  Golden g("act_quant_fp8");
  LOAD_OR_SKIP(g);
  auto x = g.f("x");
  for (int b : {64, 128}) {
    std::vector<float> y(x.size());
    for (size_t r = 0; r < 8; ++r) kernels::quant_fp8(x.data() + r * 512, 512, b, y.data() + r * 512);
    EXPECT_EQ(diff(y.data(), g.f("sim_b" + std::to_string(b)), "act_quant sim").mismatches, 0);
    auto sc = g.f("scale_b" + std::to_string(b));
    for (size_t r = 0; r < 8; ++r)
      for (int blk = 0; blk < 512 / b; ++blk) {
        float amax = 0;
        for (int i = 0; i < b; ++i) amax = std::max(amax, std::fabs(x[r * 512 + size_t(blk * b + i)]));
        EXPECT_EQ(kernels::fp8_block_scale(std::max(amax, kernels::kFp8AmaxFloor)), sc[r * size_t(512 / b) + size_t(blk)]);
      }
  }
}

TEST(Dsv4Golden, Fp4QuantIsExact) {
  Golden g("fp4_quant");
  LOAD_OR_SKIP(g);
  auto x = g.f("x");
  std::vector<float> y(x.size());
  kernels::quant_fp4(x.data(), int64_t(x.size()), 32, y.data());
  EXPECT_EQ(diff(y.data(), g.f("sim"), "fp4 sim").mismatches, 0);
}

TEST(Dsv4Golden, Fp8Linear) {
  Golden g("fp8_linear");
  LOAD_OR_SKIP(g);
  auto x = g.f("x");
  LinearWeight w = g.fp8("w");
  std::vector<float> y(size_t(5 * w.out));
  kernels::linear(w, x.data(), 5, y.data(), true);
  // measured: bit-exact (0/1600; fp32 vs fp64 accumulation never crossed a bf16 boundary here)
  Diff d = diff(y.data(), g.f("out"), "fp8_linear");
  EXPECT_EQ(d.mismatches, 0);
}

TEST(Dsv4Golden, Fp4Linear) {
  Golden g("fp4_linear");
  LOAD_OR_SKIP(g);
  auto x = g.f("x");
  LinearWeight w = g.fp4("w");
  std::vector<float> y(size_t(5 * w.out)), row(size_t(w.in));
  auto wd = g.f("w_dequant");
  for (int64_t r = 0; r < w.out; ++r) {
    kernels::dequant_row(w, r, row.data());
    ASSERT_EQ(std::memcmp(row.data(), wd.data() + r * w.in, size_t(w.in) * 4), 0) << "dequantized row " << r;
  }
  kernels::linear(w, x.data(), 5, y.data(), true);
  Diff d = diff(y.data(), g.f("out"), "fp4_linear");  // measured: bit-exact (0/640)
  EXPECT_EQ(d.mismatches, 0);
}

TEST(Dsv4Golden, RmsNorm) {
  Golden g("rmsnorm");
  LOAD_OR_SKIP(g);
  auto x = g.f("x");
  std::vector<float> y(x.size());
  for (size_t r = 0; r < 8; ++r) kernels::rms_norm(x.data() + r * 256, g.bf16("weight"), 256, 1e-6f, y.data() + r * 256);
  Diff d = diff(y.data(), g.f("out"), "rmsnorm");
  EXPECT_EQ(d.mismatches, 0);  // measured: bit-exact
}

TEST(Dsv4Golden, RopeTablesAndRotation) {
  Golden g("rope");
  LOAD_OR_SKIP(g);
  kernels::RopeTable yarn = yarn_rope(g.meta["params"]["yarn"]);
  kernels::RopeTable plain(64, 10000.0, kernels::YarnParams{});
  EXPECT_EQ(diff(yarn.freqs().data(), g.f("freqs_yarn"), "rope freqs yarn").mismatches, 0);
  EXPECT_EQ(diff(plain.freqs().data(), g.f("freqs_plain"), "rope freqs plain").mismatches, 0);
  auto pos = g.a("positions").to_i64();
  auto x = g.f("x");
  for (auto [t, name] : {std::pair{&yarn, std::string("yarn")}, std::pair{&plain, std::string("plain")}}) {
    std::vector<float> c(15 * 32), s(15 * 32), fwd(x), inv(x);
    for (size_t i = 0; i < 15; ++i) {
      t->angles(pos[i], c.data() + i * 32, s.data() + i * 32);
      for (int h = 0; h < 3; ++h) {
        t->apply(fwd.data() + (i * 3 + size_t(h)) * 128 + 64, pos[i]);
        t->apply(inv.data() + (i * 3 + size_t(h)) * 128 + 64, pos[i], true);
      }
    }
    EXPECT_EQ(diff(c.data(), g.f("cos_" + name), "rope cos").mismatches, 0);
    EXPECT_EQ(diff(s.data(), g.f("sin_" + name), "rope sin").mismatches, 0);
    EXPECT_EQ(diff(fwd.data(), g.f("out_fwd_" + name), "rope forward").mismatches, 0);
    EXPECT_EQ(diff(inv.data(), g.f("out_inv_" + name), "rope inverse").mismatches, 0);
  }
}

TEST(Dsv4Golden, HadamardAndFp4) {
  Golden g("hadamard");
  LOAD_OR_SKIP(g);
  auto x = g.f("x");
  for (size_t r = 0; r < 6; ++r) kernels::hadamard(x.data() + r * 128, 128);
  EXPECT_EQ(diff(x.data(), g.f("out"), "hadamard").mismatches, 0);
  kernels::fake_quant_fp4(x.data(), int64_t(x.size()), 32);
  EXPECT_EQ(diff(x.data(), g.f("out_then_fp4"), "hadamard+fp4").mismatches, 0);
}

TEST(Dsv4Golden, SparseAttentionWithSink) {
  Golden g("sparse_attn");
  LOAD_OR_SKIP(g);
  auto q = g.f("q"), kv = g.f("kv"), sink = g.f("sink");
  auto idx = g.a("idx").to_i64();
  const int64_t S = 6, H = 4, D = 512, K = g.a("idx").shape[1];
  const float scale = float(g.meta["params"]["scale"].get<double>());
  std::vector<float> out(size_t(S * H * D));
  for (int64_t s = 0; s < S; ++s) {
    std::vector<const float*> e;
    for (int64_t k = 0; k < K; ++k)
      if (idx[size_t(s * K + k)] >= 0) e.push_back(kv.data() + idx[size_t(s * K + k)] * D);
    kernels::sparse_attention(q.data() + s * H * D, H, D, e.data(), int64_t(e.size()), sink.data(), scale,
                              out.data() + s * H * D);
  }
  Diff d = diff(out.data(), g.f("out"), "sparse_attn");
  // measured: bit-exact (with fp32 sums it was 1/12288 elements off by one bf16 ulp)
  EXPECT_EQ(d.mismatches, 0);
}

// ---------------------------------------------------------------- mHC

TEST(Dsv4Golden, HcPreSinkhornAndPost) {
  Golden g("hc_pre_post");
  LOAD_OR_SKIP(g);
  auto X = g.f("X"), y = g.f("y");
  HcWeights w{g.f32p("fn"), g.f32p("base"), g.f32p("scale")};
  HcSpec s{4, 256, 20, 1e-6f, 1e-6f};
  std::vector<float> xpre(5 * 256), post(5 * 4), comb(5 * 16), out(X);
  for (size_t t = 0; t < 5; ++t) {
    hc_pre(w, s, X.data() + t * 1024, xpre.data() + t * 256, post.data() + t * 4, comb.data() + t * 16);
    hc_post(s, y.data() + t * 256, post.data() + t * 4, comb.data() + t * 16, out.data() + t * 1024);
  }
  // post/comb (fp32), x_pre and out_post (bf16): measured bit-exact (max |diff| 0), required so
  Diff dp = diff(post.data(), g.f("post"), "hc post");
  Diff dc = diff(comb.data(), g.f("comb"), "hc comb");
  EXPECT_EQ(dp.mismatches, 0);
  EXPECT_EQ(dc.mismatches, 0);
  Diff dx = diff(xpre.data(), g.f("x_pre"), "hc_pre x");
  Diff dq = diff(out.data(), g.f("out_post"), "hc_post out");
  EXPECT_EQ(dx.mismatches, 0);
  EXPECT_EQ(dq.mismatches, 0);
  // all 5 rows at once (the mixes as one product, the rest a row per thread): the same bits
  std::vector<float> xpre5(5 * 256), post5(5 * 4), comb5(5 * 16), out5(X);
  hc_pre_rows(w, s, X.data(), 5, xpre5.data(), post5.data(), comb5.data());
  hc_post_rows(s, y.data(), post5.data(), comb5.data(), 5, out5.data());
  EXPECT_EQ(xpre5, xpre);
  EXPECT_EQ(post5, post);
  EXPECT_EQ(comb5, comb);
  EXPECT_EQ(out5, out);
}

TEST(Dsv4Golden, HcHeadNormAndLogits) {
  Golden g("hc_head");
  LOAD_OR_SKIP(g);
  auto X = g.f("X");
  HcWeights w{g.f32p("fn"), g.f32p("base"), g.f32p("scale")};
  HcSpec s{4, 256, 20, 1e-6f, 1e-6f};
  std::vector<float> out(3 * 256), normed(3 * 256), logits(3 * 64);
  for (size_t t = 0; t < 3; ++t) {
    hc_head(w, s, X.data() + t * 1024, out.data() + t * 256);
    kernels::rms_norm(out.data() + t * 256, g.bf16("norm"), 256, 1e-6f, normed.data() + t * 256);
  }
  kernels::linear(g.plain("head"), normed.data(), 3, logits.data(), false);
  Diff d1 = diff(out.data(), g.f("out"), "hc_head");
  EXPECT_EQ(d1.mismatches, 0);
  EXPECT_EQ(diff(normed.data(), g.f("normed"), "hc_head normed").mismatches, 0);
  // hc_head, norm and fp32 logits: measured bit-exact, max |diff| 0 (logits were 2.4e-7 off with fp32 sums)
  Diff d3 = diff(logits.data(), g.f("logits"), "hc_head logits");
  EXPECT_EQ(d3.mismatches, 0);
}

// ---------------------------------------------------------------- MoE

TEST(Dsv4Golden, GateBiasedAndHash) {
  Golden g("gate");
  LOAD_OR_SKIP(g);
  auto x = g.f("x");
  auto ids = g.a("ids").to_i64();
  MoeWeights w;
  w.gate = g.plain("weight");
  MoeSpec s;
  s.dim = 256;
  s.experts = 16;
  s.topk = 3;
  s.route_scale = 1.5f;
  s.vocab = 32;
  auto want_ib = g.a("indices_biased").to_i64(), want_ih = g.a("indices_hash").to_i64();
  auto want_wb = g.f("weights_biased"), want_wh = g.f("weights_hash");
  std::vector<float> wb, wh;
  for (size_t t = 0; t < 6; ++t) {
    w.bias = g.f32p("bias");
    w.tid2eid = nullptr;
    s.hash = false;
    Routing r = route(w, s, x.data() + t * 256, ids[t]);
    for (size_t k = 0; k < 3; ++k) EXPECT_EQ(r.experts[k], want_ib[t * 3 + k]) << "biased t " << t;
    wb.insert(wb.end(), r.weights.begin(), r.weights.end());
    w.bias = nullptr;
    w.tid2eid = g.a("tid2eid").data.data();
    w.tid2eid_i64 = true;
    s.hash = true;
    r = route(w, s, x.data() + t * 256, ids[t]);
    for (size_t k = 0; k < 3; ++k) EXPECT_EQ(r.experts[k], want_ih[t * 3 + k]) << "hash t " << t;
    wh.insert(wh.end(), r.weights.begin(), r.weights.end());
  }
  // experts and fp32 routing weights: measured bit-exact
  EXPECT_EQ(diff(wb.data(), want_wb, "gate weights biased").mismatches, 0);
  EXPECT_EQ(diff(wh.data(), want_wh, "gate weights hash").mismatches, 0);
}

TEST(Dsv4Golden, ExpertSwiGluRoutedAndShared) {
  Golden g("expert_swiglu");
  LOAD_OR_SKIP(g);
  auto x = g.f("x"), rw = g.f("route_weight");
  MoeSpec s;
  s.swiglu_limit = 10.0f;
  ExpertWeights routed{g.fp4("routed_w1"), g.fp4("routed_w2"), g.fp4("routed_w3")};
  ExpertWeights shared{g.fp8("shared_w1"), g.fp8("shared_w2"), g.fp8("shared_w3")};
  std::vector<float> out(5 * 256);
  expert_forward(routed, s, x.data(), 5, rw.data(), out.data());
  Diff d1 = diff(out.data(), g.f("routed_out"), "expert routed (clamped)");
  expert_forward(shared, s, x.data(), 5, nullptr, out.data());
  Diff d2 = diff(out.data(), g.f("shared_out"), "expert shared (clamped)");
  s.swiglu_limit = 0.0f;
  expert_forward(routed, s, x.data(), 5, rw.data(), out.data());
  Diff d3 = diff(out.data(), g.f("routed_out_noclamp"), "expert routed (no clamp)");
  // measured: all three bit-exact
  for (const Diff& d : {d1, d2, d3}) EXPECT_EQ(d.mismatches, 0);
}

// The "moe" golden's layer: 8 FP4 experts of 256 wide, 2 a token, the FP8 shared expert (no
// router bias or tid2eid: the tests add what they route by).
MoeWeights moe_golden_weights(Golden& g) {
  MoeWeights w;
  w.gate = g.plain("gate_weight");
  for (int e = 0; e < 8; ++e) {
    const std::string p = "experts." + std::to_string(e) + ".";
    w.experts.push_back({g.fp4(p + "w1"), g.fp4(p + "w2"), g.fp4(p + "w3")});
  }
  w.shared = {g.fp8("shared_experts.w1"), g.fp8("shared_experts.w2"), g.fp8("shared_experts.w3")};
  return w;
}
MoeSpec moe_golden_spec() {
  MoeSpec s;
  s.dim = 256;
  s.experts = 8;
  s.topk = 2;
  s.route_scale = 1.5f;
  s.swiglu_limit = 10.0f;
  return s;
}

TEST(Dsv4Golden, MoeLayer) {
  Golden g("moe");
  LOAD_OR_SKIP(g);
  auto x = g.f("x");
  MoeWeights w = moe_golden_weights(g);
  w.bias = g.f32p("gate_bias");
  MoeSpec s = moe_golden_spec();
  s.vocab = 1 << 20;
  auto want_idx = g.a("route_indices").to_i64();
  for (size_t t = 0; t < 6; ++t) {
    Routing r = route(w, s, x.data() + t * 256, 0);
    EXPECT_EQ(r.experts, (std::vector<int64_t>{want_idx[t * 2], want_idx[t * 2 + 1]})) << t;
  }
  std::vector<int64_t> ids(6, 0);
  std::vector<float> out(6 * 256);
  moe_forward(w, s, x.data(), ids.data(), 6, out.data());
  Diff d = diff(out.data(), g.f("out"), "moe");  // measured: bit-exact (0/1536)
  EXPECT_EQ(d.mismatches, 0);
  // Experts of a few rows run whole, one per thread; with more rows an expert's products split
  // over the threads. Either way, at 1 or 2 threads, every row's output is the same bits: the
  // 6 rows again at 1 and 2 threads, and repeated 4 times (experts of up to 24 rows).
  for (int threads : {1, 2}) {
    kernels::set_num_threads(threads);
    std::vector<float> again(out.size());
    moe_forward(w, s, x.data(), ids.data(), 6, again.data());
    EXPECT_EQ(again, out) << threads << " threads";
    std::vector<float> x4, out4(4 * out.size());
    for (int k = 0; k < 4; ++k) x4.insert(x4.end(), x.begin(), x.begin() + 6 * 256);
    std::vector<int64_t> ids4(24, 0);
    moe_forward(w, s, x4.data(), ids4.data(), 24, out4.data());
    for (int k = 0; k < 4; ++k)
      EXPECT_TRUE(std::equal(out.begin(), out.end(), out4.begin() + k * 6 * 256)) << threads << " threads, copy " << k;
  }
  kernels::set_num_threads(0);
}

// Hash layers compute only the chosen experts' gate rows (moe.cpp: gate_scores). Each route
// equals the one from the whole gate's scores, and the gate rows no token chooses are never
// read: set to NaN, the outputs are the same bits (6 rows, 2 of 8 experts each, 3 distinct
// experts in all: fewer than half, so the gathered product runs).
TEST(Dsv4Golden, MoeHashLayerReadsOnlyTheChosenGateRows) {
  Golden g("moe");
  LOAD_OR_SKIP(g);
  auto x = g.f("x");
  MoeWeights w = moe_golden_weights(g);
  MoeSpec s = moe_golden_spec();
  s.hash = true;
  s.vocab = 4;
  const std::vector<int64_t> tid2eid = {5, 1, 1, 6, 6, 5, 1, 5};  // [vocab, topk]
  w.tid2eid = tid2eid.data();
  w.tid2eid_i64 = true;
  const std::vector<int64_t> ids = {0, 1, 2, 3, 0, 2};
  for (size_t t = 0; t < 6; ++t) {
    Routing r = route(w, s, x.data() + t * 256, ids[t]);
    std::vector<float> full(8);
    kernels::linear(w.gate, x.data() + t * 256, 1, full.data(), false);
    Routing whole = route_scored(w, s, full, ids[t]);
    EXPECT_EQ(r.experts, whole.experts) << t;
    EXPECT_EQ(r.weights, whole.weights) << t;
  }
  std::vector<float> out(6 * 256);
  moe_forward(w, s, x.data(), ids.data(), 6, out.data());
  std::vector<uint16_t> poisoned(static_cast<const uint16_t*>(w.gate.data), static_cast<const uint16_t*>(w.gate.data) + 8 * 256);
  for (int64_t e : {0, 2, 3, 4, 7}) std::fill_n(poisoned.begin() + e * 256, 256, uint16_t(0x7FC0));
  MoeWeights wp = w;
  wp.gate.data = poisoned.data();
  std::vector<float> again(out.size());
  moe_forward(wp, s, x.data(), ids.data(), 6, again.data());
  EXPECT_EQ(again, out);
  for (float v : out) ASSERT_TRUE(std::isfinite(v));
  // an id outside the table is an error, as before
  const std::vector<int64_t> bad = {0, 4};
  EXPECT_THROW(moe_forward(w, s, x.data(), bad.data(), 2, again.data()), strata::Error);
}

// ---------------------------------------------------------------- compressor, indexer, attention

void compressor_golden(const std::string& name) {
  Golden g(name);
  if (!g.present()) GTEST_SKIP() << "no golden at " << g.dir;
  g.load();
  const auto& p = g.meta["params"];
  const int64_t ratio = p["ratio"], hd = p["head_dim"], S = p["seq"];
  kernels::RopeTable rope = yarn_rope(p["rope"]);
  CompressorWeights w{g.plain("wkv"), g.plain("wgate"), g.f32p("ape"), g.bf16("norm")};
  CompressorSpec s{ratio, hd, 64, p["rotate"].get<bool>(), 1e-6f, &rope};
  auto x = g.f("x");
  const int64_t width = (ratio == 4 ? 2 : 1) * hd;
  std::vector<float> kv(size_t(S * width)), sc(size_t(S * width));
  compressor_project(w, s, x.data(), S, kv.data(), sc.data());
  CompressorState st;
  // stored as the model stores them (entry_codec.h): lossless, so the golden comparison is of
  // the unpacked values
  st.init(ratio, s.rotate ? EntryCodec::index(hd, IndexKeyFormat::fp8) : EntryCodec::kv(hd, 64));
  for (int64_t t = 0; t < S; ++t) compressor_step(w, s, st, kv.data() + t * width, sc.data() + t * width, t);
  ASSERT_EQ(st.n_entries(), S / ratio);
  Diff d = diff(st.values().data(), g.f("entries_prefill"), name.c_str());
  // measured: bit-exact for ratio 4 (0/2048), ratio 128 (0/1024) and the indexer compressor (0/512)
  EXPECT_EQ(d.mismatches, 0);
}

TEST(Dsv4Golden, CompressorRatio4) { compressor_golden("compressor_r4"); }
TEST(Dsv4Golden, CompressorRatio128) { compressor_golden("compressor_r128"); }
TEST(Dsv4Golden, CompressorRatio4Indexer) { compressor_golden("compressor_r4_indexer"); }

void indexer_golden(IndexKeyFormat key_format) {
  Golden g("indexer");
  LOAD_OR_SKIP(g);
  const auto& p = g.meta["params"];
  const int64_t S = p["seq"], ih = p["index_n_heads"], id = p["index_head_dim"], topk = p["index_topk"];
  kernels::RopeTable rope = yarn_rope(p["rope"]);
  IndexerWeights w;
  w.wq_b = g.fp8("wq_b");
  w.weights_proj = g.plain("weights_proj");
  w.compressor = {g.plain("wkv"), g.plain("wgate"), g.f32p("ape"), g.bf16("norm")};
  IndexerSpec s{ih, id, 64, topk, &rope, CompressorSpec{4, id, 64, true, 1e-6f, &rope}};
  auto x = g.f("x"), qr = g.f("qr");
  std::vector<float> q(size_t(S * ih * id)), wt(size_t(S * ih)), kv(size_t(S * 2 * id)), sc(size_t(S * 2 * id));
  std::vector<int64_t> pos(static_cast<size_t>(S));
  std::iota(pos.begin(), pos.end(), int64_t(0));
  indexer_queries(w, s, qr.data(), S, pos.data(), q.data());
  indexer_weights(w, s, x.data(), S, wt.data());
  compressor_project(w.compressor, s.compressor, x.data(), S, kv.data(), sc.data());
  CompressorState keys;
  keys.init(4, EntryCodec::index(id, key_format));
  auto want_scores = g.f("scores");
  auto want_topk = g.a("topk").to_i64();
  const int64_t ncol = g.a("scores").shape[1], kcol = g.a("topk").shape[1];
  std::vector<float> got_vis, want_vis;
  int64_t topk_mismatch = 0;
  for (int64_t t = 0; t < S; ++t) {
    compressor_step(w.compressor, s.compressor, keys, kv.data() + t * 2 * id, sc.data() + t * 2 * id, t);
    const int64_t vis = (t + 1) / 4;
    auto scores = indexer_scores(s, q.data() + t * ih * id, wt.data() + t * ih, keys, vis);
    for (int64_t i = 0; i < vis; ++i) {
      got_vis.push_back(scores[size_t(i)]);
      want_vis.push_back(want_scores[size_t(t * ncol + i)]);
    }
    auto sel = indexer_select(s, q.data() + t * ih * id, wt.data() + t * ih, keys, vis);
    std::vector<int64_t> want;
    for (int64_t k = 0; k < kcol; ++k)
      if (want_topk[size_t(t * kcol + k)] >= 0) want.push_back(want_topk[size_t(t * kcol + k)]);
    topk_mismatch += sel != want;
  }
  EXPECT_EQ(diff(keys.values().data(), g.f("keys"), "indexer keys").mismatches, 0);
  Diff d = diff(got_vis.data(), want_vis, "indexer scores");  // measured: keys and scores bit-exact
  EXPECT_EQ(d.mismatches, 0);
  // top-k follows the scores; measured: identical selections on every row
  EXPECT_EQ(topk_mismatch, 0);
}

// Both storage formats of the keys hold the same values, so both give the golden's bits.
TEST(Dsv4Golden, IndexerScoresAndTopKWithFp8Keys) { indexer_golden(IndexKeyFormat::fp8); }
TEST(Dsv4Golden, IndexerScoresAndTopKWithFp4Keys) { indexer_golden(IndexKeyFormat::fp4); }

// wo_a as the forward pass reads it (its FP8 bytes, the activation unquantized) and as the
// reference keeps it (dequantized to bf16): the same weight, so both give the golden's bits.
void attention_csa_golden(bool wo_a_bf16_copy) {
  Golden g("attention_csa");
  LOAD_OR_SKIP(g);
  const auto& p = g.meta["params"];
  kernels::RopeTable rope = yarn_rope(p["rope"]);
  AttentionSpec s;
  s.dim = p["dim"];
  s.heads = p["heads"];
  s.head_dim = p["head_dim"];
  s.rope_dim = 64;
  s.q_lora_rank = p["q_lora_rank"];
  s.groups = p["o_groups"];
  s.o_lora_rank = p["o_lora_rank"];
  s.window = p["window"];
  s.ratio = p["compress_ratio"];
  s.norm_eps = 1e-6f;
  s.rope = &rope;
  s.compressor = CompressorSpec{s.ratio, s.head_dim, 64, false, 1e-6f, &rope};
  s.indexer = IndexerSpec{p["index_n_heads"], p["index_head_dim"], 64, p["index_topk"], &rope,
                          CompressorSpec{4, p["index_head_dim"], 64, true, 1e-6f, &rope}};
  AttentionWeights w;
  w.attn_sink = g.f32p("attn_sink");
  w.wq_a = g.fp8("wq_a");
  w.q_norm = g.bf16("q_norm.weight");
  w.wq_b = g.fp8("wq_b");
  w.wkv = g.fp8("wkv");
  w.kv_norm = g.bf16("kv_norm.weight");
  w.wo_b = g.fp8("wo_b");
  w.wo_a = g.fp8("wo_a");
  w.wo_a.act_quant = false;
  EXPECT_TRUE(wo_a_fp8_is_exact(w.wo_a, s.o_lora_rank));
  if (wo_a_bf16_copy) w.wo_a_bf16 = bf16_copy(w.wo_a);
  w.compressor = {g.plain("compressor.wkv.weight"), g.plain("compressor.wgate.weight"), g.f32p("compressor.ape"),
                  g.bf16("compressor.norm.weight")};
  w.indexer.wq_b = g.fp8("indexer.wq_b");
  w.indexer.weights_proj = g.plain("indexer.weights_proj.weight");
  w.indexer.compressor = {g.plain("indexer.compressor.wkv.weight"), g.plain("indexer.compressor.wgate.weight"),
                          g.f32p("indexer.compressor.ape"), g.bf16("indexer.compressor.norm.weight")};
  LayerState st;
  init_layer_state(s, st);
  auto x = g.f("x");
  const int64_t P = p["prefill"], S = p["seq"];
  std::vector<float> out(size_t(S * s.dim));
  attention_forward(w, s, st, x.data(), P, 0, out.data());
  for (int64_t t = P; t < S; ++t) attention_forward(w, s, st, x.data() + t * s.dim, 1, t, out.data() + t * s.dim);
  Diff d1 = diff(out.data(), g.f("out_prefill"), "attention_csa prefill");
  Diff d2 = diff(out.data() + P * s.dim, g.f("out_decode"), "attention_csa decode");
  // measured: bit-exact (prefill 0/1792, decode 0/512)
  for (const Diff& d : {d1, d2}) EXPECT_EQ(d.mismatches, 0);
}

TEST(Dsv4Golden, AttentionCsaLayerPrefillAndDecode) { attention_csa_golden(false); }
TEST(Dsv4Golden, AttentionCsaLayerWithBf16WoACopy) { attention_csa_golden(true); }

}  // namespace
}  // namespace strata::dsv4
