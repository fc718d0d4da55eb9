// The layers Qwen3.5 shares with other architectures (models/layers) against the Qwen3.5
// component goldens of reference/ (tests/goldens/qwen3_5/components/): the (1+w) RMSNorm, the
// gated RMSNorm, the delta rule's q/k preparation, gates and recurrent step with its state, the
// causal conv with its tail, and partial rotate-half RoPE. The reference's rounding rules are
// the project's (fp64 sums rounded once, transcendental functions in fp64 rounded once), so
// every comparison requires bit equality.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "core/numfmt.h"
#include "models/component_golden.h"
#include "models/layers/causal_conv1d.h"
#include "models/layers/gated_delta_rule.h"
#include "models/layers/gated_rms_norm.h"
#include "models/layers/kv_dots.h"
#include "models/layers/offset_rms_norm.h"
#include "models/layers/rotate_half_rope.h"

namespace strata::models {
namespace {
using strata::testing::diff;

struct Golden : strata::testing::Golden {
  explicit Golden(const std::string& component) : strata::testing::Golden("qwen3_5", component) {}
};

TEST(Qwen35Layers, OffsetRmsNorm) {
  Golden g("rmsnorm");
  LOAD_OR_SKIP(g);
  auto x = g.f("x");
  const float eps = g.meta["params"]["eps"].get<float>();
  std::vector<float> y(x.size());
  for (size_t r = 0; r < 8; ++r) offset_rms_norm(x.data() + r * 256, g.bf16("weight"), 256, eps, y.data() + r * 256);
  EXPECT_EQ(diff(y.data(), g.f("out"), "offset rmsnorm").mismatches, 0);
}

TEST(Qwen35Layers, GatedRmsNorm) {
  Golden g("gated_rmsnorm");
  LOAD_OR_SKIP(g);
  auto o = g.f("o"), z = g.f("z");
  const float eps = g.meta["params"]["eps"].get<float>();
  std::vector<float> y(o.size());
  for (size_t r = 0; r < o.size() / 64; ++r)
    gated_rms_norm(o.data() + r * 64, z.data() + r * 64, g.bf16("weight"), 64, eps, y.data() + r * 64);
  EXPECT_EQ(diff(y.data(), g.f("out"), "gated rmsnorm").mismatches, 0);
}

TEST(Qwen35Layers, DeltaRuleQkPreparation) {
  Golden g("l2norm");
  LOAD_OR_SKIP(g);
  auto x = g.f("x");
  std::vector<float> q = x, k = x;
  for (size_t r = 0; r < 8; ++r) prepare_delta_qk(q.data() + r * 128, k.data() + r * 128, 128);
  EXPECT_EQ(diff(k.data(), g.f("out_k"), "l2norm k").mismatches, 0);
  EXPECT_EQ(diff(q.data(), g.f("out_q"), "l2norm q").mismatches, 0);
}

TEST(Qwen35Layers, CausalConvWithItsTail) {
  Golden g("causal_conv1d");
  LOAD_OR_SKIP(g);
  const int64_t C = 48, K = 4, T = 7;
  auto x = g.f("x"), tail_f = g.f("tail_in");
  std::vector<float> w(size_t(C * K));
  for (size_t i = 0; i < w.size(); ++i) w[i] = bf16_to_f32(g.bf16("conv1d.weight")[i]);
  for (bool zero : {false, true}) {
    std::vector<uint16_t> tail(size_t((K - 1) * C), 0);
    if (!zero)
      for (size_t i = 0; i < tail.size(); ++i) tail[i] = f32_to_bf16(tail_f[i]);
    std::vector<float> y(size_t(T * C));
    for (int64_t t = 0; t < T; ++t) causal_conv1d_step(tail.data(), tail.data(), x.data() + t * C, w.data(), C, K, y.data() + t * C);
    EXPECT_EQ(diff(y.data(), g.f(zero ? "out_zero_tail" : "out"), zero ? "conv from zeros" : "conv").mismatches, 0);
    if (!zero) {
      std::vector<float> tf(tail.size());
      for (size_t i = 0; i < tail.size(); ++i) tf[i] = bf16_to_f32(tail[i]);
      EXPECT_EQ(diff(tf.data(), g.f("tail_out"), "conv tail").mismatches, 0);
    }
  }
}

TEST(Qwen35Layers, GatedDeltaRuleSteps) {
  Golden g("gated_delta_rule");
  LOAD_OR_SKIP(g);
  const int64_t steps = 6, hv = 2, dk = 128, dv = 128;
  auto q = g.f("q"), k = g.f("k"), v = g.f("v"), a = g.f("a"), b = g.f("b"), a_log = g.f("A_log"), dt = g.f("dt_bias");
  std::vector<float> S = g.f("state_in"), gs(size_t(steps * hv)), betas(size_t(steps * hv));
  std::vector<float> qp(size_t(steps * hv * dk)), kp(size_t(steps * hv * dk)), out(size_t(steps * hv * dv));
  for (int64_t t = 0; t < steps; ++t)
    for (int64_t h = 0; h < hv; ++h) {
      float* qh = qp.data() + (t * hv + h) * dk;
      float* kh = kp.data() + (t * hv + h) * dk;
      std::memcpy(qh, q.data() + t * dk, size_t(dk) * 4);  // one key head, repeated to both value heads
      std::memcpy(kh, k.data() + t * dk, size_t(dk) * 4);
      prepare_delta_qk(qh, kh, dk);
      const size_t i = size_t(t * hv + h);
      delta_gates(a[i], b[i], a_log[size_t(h)], dt[size_t(h)], &gs[i], &betas[i]);
      gated_delta_step(S.data() + h * dk * dv, S.data() + h * dk * dv, qh, kh, v.data() + (t * hv + h) * dv, gs[i],
                       betas[i], dk, dv, out.data() + (t * hv + h) * dv);
    }
  EXPECT_EQ(diff(gs.data(), g.f("g"), "gates g").mismatches, 0);
  EXPECT_EQ(diff(betas.data(), g.f("beta"), "gates beta").mismatches, 0);
  EXPECT_EQ(diff(qp.data(), g.f("q_prepared"), "q prepared").mismatches, 0);
  EXPECT_EQ(diff(kp.data(), g.f("k_prepared"), "k prepared").mismatches, 0);
  EXPECT_EQ(diff(out.data(), g.f("out"), "delta rule out").mismatches, 0);
  EXPECT_EQ(diff(S.data(), g.f("state_out"), "delta rule state").mismatches, 0);
}

// The step at the running ISA (AVX-512 where the CPU has it) against the scalar reference, bit
// for bit, over many tokens of realistic gates, in place and out of place, at widths that take
// the 32- and the 16-column blocks.
TEST(Qwen35Layers, GatedDeltaStepEqualsItsScalarReference) {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd;
  std::uniform_real_distribution<float> ud(0.0f, 1.0f);
  for (const auto& [dk, dv] : {std::pair<int64_t, int64_t>{128, 128}, {64, 48}, {32, 16}}) {
    std::vector<float> fast(static_cast<size_t>(dk * dv)), ref(fast.size()), o1(static_cast<size_t>(dv)), o2(o1.size());
    for (auto& x : ref) x = 0.1f * nd(rng);
    fast = ref;
    for (int t = 0; t < 40; ++t) {
      std::vector<float> q(static_cast<size_t>(dk)), k(q.size()), v(o1.size());
      for (auto& x : q) x = nd(rng);
      for (auto& x : k) x = nd(rng);
      for (auto& x : v) x = round_bf16(nd(rng));
      prepare_delta_qk(q.data(), k.data(), dk);
      float g, beta;
      delta_gates(round_bf16(nd(rng)), round_bf16(nd(rng)), round_bf16(2.0f * ud(rng)), round_bf16(nd(rng)), &g, &beta);
      if (t % 2 == 0) {
        gated_delta_step(fast.data(), fast.data(), q.data(), k.data(), v.data(), g, beta, dk, dv, o1.data());
      } else {
        std::vector<float> next(fast.size());
        gated_delta_step(fast.data(), next.data(), q.data(), k.data(), v.data(), g, beta, dk, dv, o1.data());
        fast = next;
      }
      gated_delta_step_scalar(ref.data(), ref.data(), q.data(), k.data(), v.data(), g, beta, dk, dv, o2.data());
      ASSERT_EQ(std::memcmp(o1.data(), o2.data(), o1.size() * 4), 0) << "dk " << dk << " dv " << dv << " token " << t;
      ASSERT_EQ(std::memcmp(fast.data(), ref.data(), ref.size() * 4), 0) << "dk " << dk << " dv " << dv << " token " << t;
    }
  }
}

TEST(Qwen35Layers, PartialRotateHalfRope) {
  Golden g("rope");
  LOAD_OR_SKIP(g);
  const double theta = g.meta["params"]["theta"].get<double>();
  const auto& pos = g.a("positions");
  const int64_t n = pos.shape[0];
  for (int64_t r : {16, 64}) {
    RotateHalfRope rope(r, theta);
    const std::string tag = "_r" + std::to_string(r);
    EXPECT_EQ(diff(rope.inv_freq().data(), g.f("inv_freq" + tag), ("inv_freq" + tag).c_str()).mismatches, 0);
    std::vector<float> c(size_t(n * r / 2)), s(size_t(n * r / 2));
    for (int64_t t = 0; t < n; ++t) rope.cos_sin(pos.as<int64_t>()[t], c.data() + t * r / 2, s.data() + t * r / 2);
    EXPECT_EQ(diff(c.data(), g.f("cos" + tag), ("cos" + tag).c_str()).mismatches, 0);
    EXPECT_EQ(diff(s.data(), g.f("sin" + tag), ("sin" + tag).c_str()).mismatches, 0);
  }
  RotateHalfRope rope(16, theta);
  auto x = g.f("x");
  for (int64_t t = 0; t < n; ++t)
    for (int64_t h = 0; h < 3; ++h) rope.apply(x.data() + (t * 3 + h) * 64, pos.as<int64_t>()[t]);
  EXPECT_EQ(diff(x.data(), g.f("out_r16"), "rope r16").mismatches, 0);
}

// The attention's key dots and value accumulations at the running ISA against the scalar
// reference, bit for bit, on bf16 rows of mixed magnitudes.
TEST(Qwen35Layers, KvDotsEqualTheirScalarReference) {
  std::mt19937 rng(9);
  std::normal_distribution<float> nd;
  const KvDots fast = kv_dots(), ref = kv_dots(Isa::scalar);
  for (const int64_t n : {16, 64, 256}) {
    std::vector<float> q(static_cast<size_t>(n));
    std::vector<uint16_t> k(q.size());
    for (int trial = 0; trial < 50; ++trial) {
      for (auto& x : q) x = round_bf16(nd(rng) * std::ldexp(1.0f, int(rng() % 16) - 8));
      for (auto& x : k) x = f32_to_bf16(nd(rng) * std::ldexp(1.0f, int(rng() % 16) - 8));
      const double d1 = fast.dot(q.data(), k.data(), n), d2 = ref.dot(q.data(), k.data(), n);
      ASSERT_EQ(std::memcmp(&d1, &d2, 8), 0) << n;
      // several query rows against the key, as a group of heads reads it
      for (const int64_t G : {1, 3, 4, 8}) {
        std::vector<float> qs(static_cast<size_t>(G * n));
        for (auto& x : qs) x = round_bf16(nd(rng));
        std::vector<double> q64(qs.begin(), qs.end());
        std::vector<double> g1(static_cast<size_t>(G)), g2(g1.size());
        fast.dots(q64.data(), n, G, k.data(), n, g1.data());
        ref.dots(q64.data(), n, G, k.data(), n, g2.data());
        ASSERT_EQ(std::memcmp(g1.data(), g2.data(), g1.size() * 8), 0) << n << " G " << G;
        for (int64_t g = 0; g < G; ++g) {
          const double one = ref.dot(qs.data() + g * n, k.data(), n);
          ASSERT_EQ(std::memcmp(&one, &g2[size_t(g)], 8), 0);
        }
        // a block of keys' weighted values into G heads' sums
        const int64_t nk = 1 + int64_t(rng() % 70);
        std::vector<std::vector<uint16_t>> vs(static_cast<size_t>(nk), std::vector<uint16_t>(static_cast<size_t>(n)));
        std::vector<const uint16_t*> vp;
        for (auto& row : vs) {
          for (auto& x : row) x = f32_to_bf16(nd(rng) * std::ldexp(1.0f, int(rng() % 16) - 8));
          vp.push_back(row.data());
        }
        std::vector<double> p(static_cast<size_t>(nk * G));
        for (auto& x : p) x = round_bf16(std::fabs(nd(rng)));
        std::vector<double> a1(static_cast<size_t>(G * n)), a2(a1.size());
        for (auto& x : a1) x = nd(rng);
        a2 = a1;
        fast.accumulate(a1.data(), G, p.data(), vp.data(), nk, n);
        ref.accumulate(a2.data(), G, p.data(), vp.data(), nk, n);
        ASSERT_EQ(std::memcmp(a1.data(), a2.data(), a1.size() * 8), 0) << n << " G " << G << " keys " << nk;
      }
    }
  }
}

}  // namespace
}  // namespace strata::models
