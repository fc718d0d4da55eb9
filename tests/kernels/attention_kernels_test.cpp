// Sparse attention with a sink, Sinkhorn, top-k, Hadamard, SwiGLU and RMSNorm against
// hand-computed values.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>
#include <vector>

#include "core/cpu.h"
#include "core/numfmt.h"
#include "kernels/hadamard.h"
#include "kernels/rmsnorm.h"
#include "kernels/sinkhorn.h"
#include "kernels/sparse_attention.h"
#include "kernels/swiglu.h"
#include "kernels/topk.h"

namespace strata::kernels {
namespace {

TEST(SparseAttention, SinkJoinsTheDenominatorOnly) {
  // One head, dim 1, q = 1, entries 2, 1, 0 (logits 2, 1, 0 at scale 1), sink 1: the weights are
  // 0.534, 0.197, 0.072 (sum 0.803, see the layer-by-layer doc §3.4); output = Σ w_j c_j.
  const float q = 1.0f, c[3] = {2.0f, 1.0f, 0.0f}, sink = 1.0f;
  const float* e[3] = {&c[0], &c[1], &c[2]};
  float out = 0;
  sparse_attention(&q, 1, 1, e, 3, &sink, 1.0f, &out);
  const double den = std::exp(0.0) + std::exp(-1.0) + std::exp(-2.0) + std::exp(-1.0);
  // bf16(p) for P·V: p = 1, e^-1, e^-2 relative to max 2
  const double want = (2.0 * 1.0 + 1.0 * double(round_bf16(float(std::exp(-1.0))))) / den;
  EXPECT_NEAR(out, want, 4e-3);  // output is bf16 (8 bits)
  EXPECT_NEAR(out, 2 * 0.534 + 0.197, 6e-3);
}

TEST(SparseAttention, HeadsAreIndependentAndEmptyListGivesZero) {
  std::vector<float> q = {1, 0, 0, 1}, c0 = {1, 0}, c1 = {0, 1}, sink = {-100.0f, -100.0f}, out(4);
  const float* e[2] = {c0.data(), c1.data()};
  sparse_attention(q.data(), 2, 2, e, 2, sink.data(), 10.0f, out.data());
  EXPECT_NEAR(out[0], 1.0f, 1e-3);  // head 0 picks c0
  EXPECT_NEAR(out[3], 1.0f, 1e-3);  // head 1 picks c1
  sparse_attention(q.data(), 2, 2, e, 0, sink.data(), 1.0f, out.data());
  for (float v : out) EXPECT_EQ(v, 0.0f);
}

TEST(Sinkhorn, CombIsDoublyStochastic) {
  std::vector<float> mixes(24), base(24), scale = {0.7f, 1.3f, 2.0f};
  for (int i = 0; i < 24; ++i) mixes[size_t(i)] = std::sin(float(i) * 1.7f) * 3.0f, base[size_t(i)] = std::cos(float(i)) * 0.5f;
  float pre[4], post[4], comb[16];
  hc_split_sinkhorn(mixes.data(), scale.data(), base.data(), 4, 20, 1e-6f, pre, post, comb);
  for (int r = 0; r < 4; ++r) {
    float row = 0, col = 0;
    for (int c = 0; c < 4; ++c) row += comb[r * 4 + c], col += comb[c * 4 + r];
    EXPECT_NEAR(row, 1.0f, 1e-3f);  // 20 iterations: rows within ~1e-4 measured, columns exact to eps
    EXPECT_NEAR(col, 1.0f, 1e-5f);
  }
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(pre[i], 1.0 / (1.0 + std::exp(-(mixes[size_t(i)] * 0.7 + base[size_t(i)]))) + 1e-6, 1e-6);
    EXPECT_NEAR(post[i], 2.0 / (1.0 + std::exp(-(mixes[size_t(4 + i)] * 1.3 + base[size_t(4 + i)]))), 1e-6);
    EXPECT_GT(pre[i], 0.0f);
    EXPECT_LT(post[i], 2.0f);
  }
}

TEST(Sinkhorn, OneIterationIsSoftmaxThenColumnNormalize) {
  std::vector<float> mixes(24, 0.0f), base(24, 0.0f), scale = {1, 1, 1};
  float pre[4], post[4], comb[16];
  hc_split_sinkhorn(mixes.data(), scale.data(), base.data(), 4, 1, 1e-6f, pre, post, comb);
  // uniform: softmax 0.25 + eps, column sum 1 + 4eps, divided by (1 + 5 eps)
  EXPECT_NEAR(comb[0], (0.25 + 1e-6) / (1 + 5e-6), 1e-7);
  EXPECT_EQ(post[0], 1.0f);
}

TEST(TopK, LargestFirstTiesToLowerIndex) {
  std::vector<float> v = {0.1f, 0.9f, 0.0f, 0.4f, 0.7f, 0.9f, 0.4f};
  EXPECT_EQ(topk(v.data(), 7, 3), (std::vector<int64_t>{1, 5, 4}));
  EXPECT_EQ(topk(v.data(), 7, 5), (std::vector<int64_t>{1, 5, 4, 3, 6}));
  EXPECT_EQ(topk(v.data(), 7, 10).size(), 7u);
  EXPECT_TRUE(topk(v.data(), 7, 0).empty());
}

// The streaming top-k (a heap of k) against a full sort of every index, on values with many
// ties, for k from 0 past n.
TEST(TopK, StreamingMatchesAFullSort) {
  std::mt19937 rng(9);
  for (int64_t n : {1, 2, 37, 1000, 5000}) {
    std::vector<float> v(static_cast<size_t>(n));
    for (auto& x : v) x = float(int(rng() % 23)) * 0.25f - 2.0f;
    std::vector<int64_t> all(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) all[size_t(i)] = i;
    std::stable_sort(all.begin(), all.end(), [&](int64_t a, int64_t b) { return v[size_t(a)] > v[size_t(b)]; });
    for (int64_t k : {int64_t(0), int64_t(1), int64_t(7), n / 2, n - 1, n, n + 3}) {
      const auto got = topk(v.data(), n, k);
      const std::vector<int64_t> want(all.begin(), all.begin() + std::clamp<int64_t>(k, 0, n));
      EXPECT_EQ(got, want) << "n " << n << " k " << k;
    }
  }
}

TEST(Hadamard, OrthonormalAndSylvesterOrder) {
  std::vector<float> x = {1, 0, 0, 0};
  hadamard(x.data(), 4, false);
  for (float v : x) EXPECT_EQ(v, 0.5f);
  std::vector<float> y = {0, 1, 0, 0};  // column 1 of [[1,1,1,1],[1,-1,1,-1],...]
  hadamard(y.data(), 4, false);
  EXPECT_EQ(y, (std::vector<float>{0.5f, -0.5f, 0.5f, -0.5f}));
  // applying twice returns the input (H·H = n·I, scaled)
  std::vector<float> z(128);
  for (int i = 0; i < 128; ++i) z[size_t(i)] = float(i % 7) - 3.0f;
  auto w = z;
  hadamard(w.data(), 128, false);
  hadamard(w.data(), 128, false);
  for (int i = 0; i < 128; ++i) EXPECT_NEAR(w[size_t(i)], z[size_t(i)], 1e-5f);
}

TEST(SwiGlu, ClampsUpBothWaysAndGateFromAbove) {
  const float g[3] = {20.0f, -20.0f, 1.0f}, u[3] = {-50.0f, 3.0f, 2.0f};
  float out[3];
  swiglu(g, u, 3, 10.0f, 0.5f, true, out);
  EXPECT_EQ(out[0], round_bf16(float(0.5 * (10.0 / (1 + std::exp(-10.0))) * -10.0)));
  EXPECT_EQ(out[1], round_bf16(float(0.5 * (-20.0 / (1 + std::exp(20.0))) * 3.0)));
  EXPECT_EQ(out[2], round_bf16(float(0.5 * (1.0 / (1 + std::exp(-1.0))) * 2.0)));
}

TEST(RmsNorm, ScalesToUnitRmsTimesWeight) {
  std::vector<float> x = {3, 4, 0, 0}, y(4);
  std::vector<uint16_t> w = {f32_to_bf16(1.0f), f32_to_bf16(2.0f), f32_to_bf16(1.0f), f32_to_bf16(1.0f)};
  rms_norm(x.data(), w.data(), 4, 0.0f, y.data());
  // rms = sqrt(25/4) = 2.5
  EXPECT_EQ(y[0], round_bf16(3.0f / 2.5f));
  EXPECT_EQ(y[1], round_bf16(2.0f * (4.0f / 2.5f)));
  EXPECT_EQ(y[2], 0.0f);
}

}  // namespace
}  // namespace strata::kernels

namespace strata::kernels {
namespace {

// The AVX-512 sparse attention against the scalar reference, bitwise: empty, short and
// window-sized entry lists (entry pairs with a remainder), 5 and 13 heads (4-head groups and
// single heads under any split over threads), a 512-dim head (32-dim P·V tiles) and a 208-dim
// one (a 16-dim remainder), entries of bf16 values as the caches hold them.
TEST(SparseAttention, Avx512MatchesScalarReferenceBitwise) {
  if (detected_isa() != Isa::avx512 || active_isa() != Isa::avx512) GTEST_SKIP() << "AVX-512 not active";
  std::mt19937 rng(17);
  std::normal_distribution<float> nd;
  for (int64_t dim : {512, 208})
    for (int64_t n : {0, 1, 3, 6, 130})
      for (int64_t heads : {5, 13}) {
      std::vector<float> q(static_cast<size_t>(heads * dim)), sink(static_cast<size_t>(heads)),
          store(static_cast<size_t>(std::max<int64_t>(1, n) * dim));
      for (auto& v : q) v = round_bf16(nd(rng));
      for (auto& v : sink) v = nd(rng);
      for (auto& v : store) v = round_bf16(nd(rng));
      std::vector<const float*> e;
      for (int64_t j = 0; j < n; ++j) e.push_back(store.data() + ((j * 7) % n) * dim);  // gathered, repeats
      std::vector<float> a(static_cast<size_t>(heads * dim)), b(static_cast<size_t>(heads * dim));
      sparse_attention_reference(q.data(), heads, dim, e.data(), n, sink.data(), 0.04f, a.data());
      avx512::sparse_attention(q.data(), heads, dim, e.data(), n, sink.data(), 0.04f, b.data());
      for (size_t i = 0; i < a.size(); ++i)
        ASSERT_EQ(std::bit_cast<uint32_t>(a[i]), std::bit_cast<uint32_t>(b[i]))
            << "dim " << dim << " n " << n << " heads " << heads << " at " << i;
    }
}

}  // namespace
}  // namespace strata::kernels
