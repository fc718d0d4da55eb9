// The chunked (WY / UT-transform) delta rule against the recurrent contract, gated_delta_step run
// token by token. The two are the same recurrence computed in different orders, so they agree to
// within fp32 rounding, not bitwise: the tolerance is the one reference/README.md gives for a
// chunked kernel, |Δ| ≤ 1e-5 · max(1, max|ref|) on the outputs and on the final state (its own
// fp32 chunked form measured ≤ 6.6e-7). Shapes: Qwen3.5-0.8B's linear-attention heads (16 value
// heads, dk = dv = 128) and qwen3.5-tiny's (4 value heads, dk = dv = 64).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "core/cpu.h"
#include "core/numfmt.h"
#include "kernels/parallel.h"
#include "models/layers/chunked_delta_rule.h"
#include "models/layers/gated_delta_rule.h"

namespace strata::models {
namespace {

struct Inputs {
  int64_t n, heads, dk, dv;
  std::vector<float> q, k, v, g, beta, state;
};

// How the gates are drawn. model: from the model's own formula (delta_gates) over projections
// and A_log spread like a trained layer's; strong: g uniform in [−8, 0); weak: g in [−0.01, 0)
// (almost no decay, so the state's magnitude builds up); β uniform in (0, 1) for the last two.
enum class Gates { model, strong, weak };

Inputs make_inputs(int64_t n, int64_t heads, int64_t dk, int64_t dv, uint32_t seed, Gates gates = Gates::model) {
  Inputs in{n, heads, dk, dv, {}, {}, {}, {}, {}, {}};
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  auto fill = [&](std::vector<float>& x, size_t size, float scale) {
    x.resize(size);
    for (float& e : x) e = round_bf16(scale * normal(rng));  // the model's q, k, v are bf16 values
  };
  fill(in.q, size_t(n * heads * dk), 1.0f);
  fill(in.k, size_t(n * heads * dk), 1.0f);
  fill(in.v, size_t(n * heads * dv), 1.0f);
  for (int64_t r = 0; r < n * heads; ++r) prepare_delta_qk(in.q.data() + r * dk, in.k.data() + r * dk, dk);
  in.g.resize(size_t(n * heads));
  in.beta.resize(size_t(n * heads));
  std::vector<float> a_log(static_cast<size_t>(heads)), dt_bias(static_cast<size_t>(heads));
  for (int64_t h = 0; h < heads; ++h) {
    a_log[size_t(h)] = round_bf16(std::log(1.0f + 15.0f * unit(rng)));  // A in [1, 16), as in the model
    dt_bias[size_t(h)] = round_bf16(normal(rng));
  }
  for (int64_t t = 0; t < n; ++t)
    for (int64_t h = 0; h < heads; ++h) {
      const size_t i = size_t(t * heads + h);
      switch (gates) {
        case Gates::model:
          delta_gates(round_bf16(2.0f * normal(rng)), round_bf16(2.0f * normal(rng)), a_log[size_t(h)],
                      dt_bias[size_t(h)], &in.g[i], &in.beta[i]);
          break;
        case Gates::strong:
        case Gates::weak: {
          const float lo = gates == Gates::strong ? -8.0f : -0.01f;
          in.g[i] = std::min(lo * (1.0f - unit(rng)), -1e-30f);  // in [lo, 0)
          in.beta[i] = std::clamp(unit(rng), 1e-6f, 1.0f - 1e-6f);
          break;
        }
      }
    }
  fill(in.state, size_t(heads * dk * dv), 0.3f);  // a nonzero initial state
  return in;
}

struct Result {
  std::vector<float> out, state;
};

Result recurrent(const Inputs& in) {
  Result r{std::vector<float>(size_t(in.n * in.heads * in.dv)), in.state};
  for (int64_t t = 0; t < in.n; ++t)
    for (int64_t h = 0; h < in.heads; ++h) {
      const int64_t row = t * in.heads + h;
      float* S = r.state.data() + h * in.dk * in.dv;
      gated_delta_step(S, S, in.q.data() + row * in.dk, in.k.data() + row * in.dk, in.v.data() + row * in.dv,
                       in.g[size_t(row)], in.beta[size_t(row)], in.dk, in.dv, r.out.data() + row * in.dv);
    }
  return r;
}

// Tokens [t0, t1) of the inputs through the chunked kernel, continuing from `state`.
void chunked_range(const Inputs& in, int64_t t0, int64_t t1, int64_t chunk, Result& r, const Isa* isa = nullptr) {
  const int64_t H = in.heads;
  const float *q = in.q.data() + t0 * H * in.dk, *k = in.k.data() + t0 * H * in.dk, *v = in.v.data() + t0 * H * in.dv;
  const float *g = in.g.data() + t0 * H, *b = in.beta.data() + t0 * H;
  float* out = r.out.data() + t0 * H * in.dv;
  if (isa)
    chunked_delta_rule(*isa, q, k, v, g, b, t1 - t0, H, in.dk, in.dv, r.state.data(), out, chunk);
  else
    chunked_delta_rule(q, k, v, g, b, t1 - t0, H, in.dk, in.dv, r.state.data(), out, chunk);
}

Result chunked(const Inputs& in, int64_t chunk = kDeltaChunk) {
  Result r{std::vector<float>(size_t(in.n * in.heads * in.dv)), in.state};
  chunked_range(in, 0, in.n, chunk, r);
  return r;
}

struct Gap {
  double max_err = 0, max_ref = 0;
  bool finite = true;
  double tolerance() const { return 1e-5 * std::max(1.0, max_ref); }
};

Gap gap(const std::vector<float>& got, const std::vector<float>& ref) {
  Gap d;
  for (size_t i = 0; i < ref.size(); ++i) {
    d.finite = d.finite && std::isfinite(got[i]);
    d.max_err = std::max(d.max_err, double(std::fabs(got[i] - ref[i])));
    d.max_ref = std::max(d.max_ref, double(std::fabs(ref[i])));
  }
  return d;
}

// Compares and prints the outputs' and the state's largest differences; returns them.
std::pair<Gap, Gap> expect_close(const Result& got, const Result& ref, const char* what) {
  const Gap o = gap(got.out, ref.out), s = gap(got.state, ref.state);
  std::printf("%-40s out: max|Δ| %.3g (max|o| %.3g)   state: max|Δ| %.3g (max|S| %.3g)\n", what, o.max_err, o.max_ref,
              s.max_err, s.max_ref);
  EXPECT_TRUE(o.finite && s.finite) << what;
  EXPECT_LE(o.max_err, o.tolerance()) << what << ": outputs";
  EXPECT_LE(s.max_err, s.tolerance()) << what << ": final state";
  return {o, s};
}

struct Shape {
  const char* name;
  int64_t heads, dk, dv;
};
constexpr Shape kShapes[] = {{"qwen3.5-0.8b", 16, 128, 128}, {"qwen3.5-tiny", 4, 64, 64}};
constexpr int64_t kLengths[] = {1, 63, 64, 65, 150};

TEST(ChunkedDeltaRule, MatchesTheRecurrentForm) {
  double worst_o = 0, worst_s = 0;
  for (const Shape& sh : kShapes)
    for (int64_t n : kLengths) {
      const Inputs in = make_inputs(n, sh.heads, sh.dk, sh.dv, uint32_t(n * 31 + sh.dk));
      const std::string what = std::string(sh.name) + ", " + std::to_string(n) + " tokens";
      const auto [o, s] = expect_close(chunked(in), recurrent(in), what.c_str());
      worst_o = std::max(worst_o, o.max_err);
      worst_s = std::max(worst_s, s.max_err);
    }
  std::printf("largest differences: outputs %.3g, state %.3g\n", worst_o, worst_s);
}

// A prefill split into calls (each call's chunks start at its first token) continues the state.
TEST(ChunkedDeltaRule, ResumesMidChunk) {
  const Inputs in = make_inputs(150, 16, 128, 128, 7);
  Result r{std::vector<float>(size_t(in.n * in.heads * in.dv)), in.state};
  chunked_range(in, 0, 100, kDeltaChunk, r);
  chunked_range(in, 100, 101, kDeltaChunk, r);
  chunked_range(in, 101, 150, kDeltaChunk, r);
  expect_close(r, recurrent(in), "0.8b, 100 + 1 + 49 tokens");
}

TEST(ChunkedDeltaRule, ChunkSizesAgree) {
  for (const Shape& sh : kShapes) {
    const Inputs in = make_inputs(150, sh.heads, sh.dk, sh.dv, 11);
    const Result ref = recurrent(in), c64 = chunked(in, 64);
    for (int64_t c : {1, 16, 32}) {
      const Result rc = chunked(in, c);
      const std::string what = std::string(sh.name) + ", chunk " + std::to_string(c);
      expect_close(rc, ref, (what + " vs recurrent").c_str());
      expect_close(rc, c64, (what + " vs chunk 64").c_str());
    }
  }
}

// Strong decay: a chunk's cumulative log-decay reaches about −500, far past fp32's range for
// e^γ alone; the decays between tokens must still come out right (and nothing may overflow).
// Weak decay: the state grows over the tokens instead of fading.
TEST(ChunkedDeltaRule, RealisticGatesStayFinite) {
  for (Gates gates : {Gates::strong, Gates::weak})
    for (const Shape& sh : kShapes) {
      const Inputs in = make_inputs(150, sh.heads, sh.dk, sh.dv, 5, gates);
      const std::string what =
          std::string(sh.name) + (gates == Gates::strong ? ", g in [-8, 0)" : ", g in [-0.01, 0)");
      expect_close(chunked(in), recurrent(in), what.c_str());
    }
  // Extreme gates: no decay at all (g = 0), and a decay that wipes the state (g = −100).
  for (float g : {0.0f, -100.0f}) {
    Inputs in = make_inputs(130, 4, 64, 64, 9);
    std::fill(in.g.begin(), in.g.end(), g);
    expect_close(chunked(in), recurrent(in), g == 0.0f ? "tiny, g = 0" : "tiny, g = -100");
  }
}

// Heads run on worker threads and the kernel is one source per ISA: neither may change a bit.
TEST(ChunkedDeltaRule, BitsIndependentOfThreadsAndIsa) {
  const Inputs in = make_inputs(150, 16, 128, 128, 3);
  const int threads = kernels::num_threads();
  kernels::set_num_threads(1);
  const Result one = chunked(in);
  kernels::set_num_threads(4);
  const Result four = chunked(in);
  kernels::set_num_threads(threads);
  EXPECT_EQ(one.out, four.out);
  EXPECT_EQ(one.state, four.state);
  for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512}) {
    if (int(isa) > int(detected_isa())) continue;
    Result r{std::vector<float>(one.out.size()), in.state};
    chunked_range(in, 0, in.n, kDeltaChunk, r, &isa);
    EXPECT_EQ(r.out, one.out) << isa_name(isa);
    EXPECT_EQ(r.state, one.state) << isa_name(isa);
  }
}

TEST(ChunkedDeltaRule, RefusesAnEmptyChunk) {
  const Inputs in = make_inputs(4, 1, 8, 8, 1);
  Result r{std::vector<float>(size_t(in.n * in.heads * in.dv)), in.state};
  EXPECT_ANY_THROW(chunked_range(in, 0, 4, 0, r));
}

}  // namespace
}  // namespace strata::models
