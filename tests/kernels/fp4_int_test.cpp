// The exact integer route for FP4 GEMVs (kernels/avx512/fp4_int.h): wherever it takes a row it
// must give the canonical dot's bits, and it must refuse every row whose canonical dot can round
// (then linear() gives the reference's bits through the fp64 decoder).
#include "kernels/avx512/fp4_int.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "core/cpu.h"
#include "core/numfmt.h"
#include "kernels/aligned_buffer.h"
#include "kernels/dot.h"
#include "kernels/linear.h"
#include "kernels/quant.h"

namespace strata::kernels {
namespace {

bool route_available(int64_t in) {
  LinearWeight w{WeightFormat::fp4, nullptr, nullptr, 1, in};
  return detected_isa() == Isa::avx512 && active_isa() == Isa::avx512 && avx512::fp4_int_supported(w);
}

struct Fp4Matrix {
  int64_t out, in;
  std::vector<uint8_t> codes, scales;
  LinearWeight weight() const { return {WeightFormat::fp4, codes.data(), scales.data(), out, in}; }
};

Fp4Matrix random_matrix(int64_t out, int64_t in, int scale_lo, int scale_span, std::mt19937& rng) {
  Fp4Matrix m{out, in, std::vector<uint8_t>(size_t(out * in / 2)), std::vector<uint8_t>(size_t(out * in / 32))};
  for (auto& b : m.codes) b = uint8_t(rng());
  for (auto& s : m.scales) s = uint8_t(scale_lo + int(rng() % uint32_t(scale_span + 1)));
  return m;
}

// Activations as the model's: values of many magnitudes, FP8-quantized in blocks of 128 (the
// small ones become e4m3 subnormals or zero), one 128-column chunk all zero.
std::vector<float> quantized_activation(int64_t in, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(in)), xq(static_cast<size_t>(in));
  for (auto& v : x) v = std::ldexp(u(rng), int(rng() % 24) - 12);
  for (int64_t k = 128; k < 256 && k < in; ++k) x[size_t(k)] = 0.0f;
  quant_fp8(x.data(), in, kActBlock, xq.data());
  return xq;
}

float reference(const LinearWeight& w, const std::vector<float>& xq, int64_t n, bool rb) {
  std::vector<float> row(static_cast<size_t>(w.in));
  dequant_row(w, n, row.data());
  const float v = dot(xq.data(), row.data(), w.in);
  return rb ? round_bf16(v) : v;
}

struct Prepared {
  AlignedBuffer<double> xd, scratch;
  avx512::Fp4IntActivation act;
  bool ok = false;
  Prepared(const std::vector<float>& xq) : xd(xq.size()), scratch(xq.size()) {
    for (size_t i = 0; i < xq.size(); ++i) xd[i] = double(xq[i]);
    ok = avx512::fp4_int_prepare(xd.data(), int64_t(xq.size()), scratch.data(), act);
  }
};

uint32_t bits(float v) { return std::bit_cast<uint32_t>(v); }

// The linear kernels' scratch holds the route's slices: in / 2 doubles per activation row.
TEST(Fp4IntRoute, ItsScratchFitsTheLinearScratch) {
  for (int64_t in : {512, 4096, 65536}) {
    EXPECT_LE(avx512::fp4_int_scratch_bytes(in), in / 2 * int64_t(sizeof(double)));
    EXPECT_GE(avx512::linear_panel_doubles(in, 1), in / 2);
    for (int64_t rows : {2, 5, 16, 17, 300})
      EXPECT_GE(avx512::linear_panel_doubles(in, rows), std::min<int64_t>(rows, avx512::kIntRouteRows) * (in / 2));
  }
}

TEST(Fp4IntRoute, TakesEveryRowOfAModelLikeProductWithTheCanonicalBits) {
  for (int64_t in : {512, 2048, 4096}) {
    if (!route_available(in)) GTEST_SKIP() << "AVX-512 with VBMI not active";
    std::mt19937 rng(static_cast<uint32_t>(in));
    const Fp4Matrix m = random_matrix(96, in, 116, 10, rng);
    const LinearWeight w = m.weight();
    const auto xq = quantized_activation(in, rng);
    Prepared p(xq);
    ASSERT_TRUE(p.ok);
    std::vector<float> y(static_cast<size_t>(w.out), -1.0f);
    for (bool rb : {false, true})
      for (int64_t n = 0; n < w.out; ++n) {
        ASSERT_TRUE(avx512::fp4_int_row(w, p.act, n, y.data(), rb)) << "in " << in << " row " << n;
        ASSERT_EQ(bits(y[size_t(n)]), bits(reference(w, xq, n, rb))) << "in " << in << " row " << n << " rb " << rb;
      }
  }
}

// Chunks of 128 columns whose values all lie within 2^7 of their largest (no tiny value, as in a
// normalized activation) are integers below 2^15 in a coarser unit: their top byte slice is zero
// and the kernel skips it. Even chunks here are such, odd ones hold values down to 2^-20 of the
// largest (three slices); every row must be taken with the canonical bits, alone and in linear().
std::vector<float> narrow_and_wide_chunks(int64_t in, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(1.0f, 2.0f);
  std::vector<float> x(static_cast<size_t>(in)), xq(static_cast<size_t>(in));
  for (int64_t k = 0; k < in; ++k) {
    const bool narrow = (k / 128) % 2 == 0;
    const int e = narrow ? -int(rng() % 7) : -int(rng() % 21);
    x[size_t(k)] = (rng() % 2 ? -1.0f : 1.0f) * std::ldexp(u(rng), e + int(k / 128 % 5));
  }
  x[5] = 0.0f;  // zeros do not count against a chunk
  quant_fp8(x.data(), in, kActBlock, xq.data());
  return xq;
}

TEST(Fp4IntRoute, ChunksWithoutTinyValuesSkipTheTopSliceWithTheCanonicalBits) {
  for (int64_t in : {512, 2048, 4096}) {
    if (!route_available(in)) GTEST_SKIP() << "AVX-512 with VBMI not active";
    std::mt19937 rng(static_cast<uint32_t>(in + 1));
    const Fp4Matrix m = random_matrix(64, in, 118, 8, rng);
    const LinearWeight w = m.weight();
    const auto xq = narrow_and_wide_chunks(in, rng);
    Prepared p(xq);
    ASSERT_TRUE(p.ok);
    for (int64_t c = 0; c < in / 128; ++c) EXPECT_EQ(p.act.two_slices[c], c % 2 == 0) << "in " << in << " chunk " << c;
    std::vector<float> y(static_cast<size_t>(w.out), -1.0f);
    for (bool rb : {false, true}) {
      for (int64_t n = 0; n < w.out; ++n) {
        ASSERT_TRUE(avx512::fp4_int_row(w, p.act, n, y.data(), rb)) << "in " << in << " row " << n;
        ASSERT_EQ(bits(y[size_t(n)]), bits(reference(w, xq, n, rb))) << "in " << in << " row " << n << " rb " << rb;
      }
      // several activation rows through linear(): each its own chunks' slices
      std::vector<float> x3 = xq;
      const auto wide = quantized_activation(in, rng);
      x3.insert(x3.end(), wide.begin(), wide.end());
      x3.insert(x3.end(), xq.begin(), xq.end());
      std::vector<float> y3(static_cast<size_t>(3 * w.out));
      linear(w, x3.data(), 3, y3.data(), rb);
      for (int64_t r = 0; r < 3; ++r) {
        const std::vector<float> xr(x3.begin() + r * in, x3.begin() + (r + 1) * in);
        for (int64_t n = 0; n < w.out; ++n)
          ASSERT_EQ(bits(y3[size_t(r * w.out + n)]), bits(reference(w, xr, n, rb))) << "in " << in << " act row " << r << " out " << n;
      }
    }
  }
}

// Several activation rows share each weight chunk's decoding (fp4_int_rows), but each row keeps
// its own exactness check: a row whose chunks lie 2^30 apart is refused, the others taken.
TEST(Fp4IntRoute, RowsDecodedTogetherAreEachTakenOrRefusedByTheirOwnSpan) {
  const int64_t in = 1024;
  if (!route_available(in)) GTEST_SKIP() << "AVX-512 with VBMI not active";
  std::mt19937 rng(31);
  const Fp4Matrix m = random_matrix(24, in, 120, 4, rng);
  const LinearWeight w = m.weight();
  std::vector<std::vector<float>> xs;
  for (int r = 0; r < 4; ++r) {
    auto xq = r == 1 ? narrow_and_wide_chunks(in, rng) : quantized_activation(in, rng);
    if (r == 2)
      for (int64_t k = 512; k < in; ++k) xq[size_t(k)] = std::ldexp(xq[size_t(k)], -30);  // exact: a power of two
    xs.push_back(xq);
  }
  std::vector<Prepared> prepared;
  prepared.reserve(4);
  for (const auto& xq : xs) prepared.emplace_back(xq);
  for (int count = 1; count <= avx512::kFp4IntRows; ++count) {
    const avx512::Fp4IntActivation* act[4];
    std::vector<std::vector<float>> ys(4, std::vector<float>(size_t(w.out), -1.0f));
    float* out[4];
    for (int r = 0; r < count; ++r) {
      ASSERT_TRUE(prepared[size_t(r)].ok);
      act[r] = &prepared[size_t(r)].act;
      out[r] = ys[size_t(r)].data();
    }
    for (int64_t n = 0; n < w.out; ++n) {
      const unsigned taken = avx512::fp4_int_rows(w, act, count, n, out, true);
      for (int r = 0; r < count; ++r) {
        ASSERT_EQ(bool(taken >> r & 1), r != 2) << "count " << count << " row " << r << " out " << n;
        if (r != 2) {
          ASSERT_EQ(bits(ys[size_t(r)][size_t(n)]), bits(reference(w, xs[size_t(r)], n, true))) << "count " << count << " row " << r;
        } else {
          ASSERT_EQ(ys[size_t(r)][size_t(n)], -1.0f);  // untouched
        }
      }
    }
  }
  std::vector<float> x4, y4(size_t(4 * w.out));
  for (const auto& xq : xs) x4.insert(x4.end(), xq.begin(), xq.end());
  linear(w, x4.data(), 4, y4.data(), true);  // the refused row through the fp64 decoder
  for (int r = 0; r < 4; ++r)
    for (int64_t n = 0; n < w.out; ++n)
      ASSERT_EQ(bits(y4[size_t(r * w.out + n)]), bits(reference(w, xs[size_t(r)], n, true))) << "row " << r << " out " << n;
}

// The span check first bounds a row's span by the weight row's scale-code span plus the
// activation's exponent span, and takes the true span (code + exponent per block) only where
// that bound exceeds the limit. Weight scales 15 codes higher in the second half of each row and
// an activation 2^-15 smaller there: each span alone is 15 + the data's own, the sum's exceeds
// the limit (53 - 27 - log2(32 blocks) = 21), the true span does not, and the row must be taken
// with the canonical bits; with the activation 2^+15 larger there instead, the true span is ~30
// and the row must be refused.
TEST(Fp4IntRoute, SpansOfWeightAndActivationThatCancelAreTaken) {
  const int64_t in = 1024;
  if (!route_available(in)) GTEST_SKIP() << "AVX-512 with VBMI not active";
  std::mt19937 rng(41);
  Fp4Matrix m = random_matrix(16, in, 118, 2, rng);
  for (int64_t n = 0; n < m.out; ++n)
    for (int64_t b = in / 64; b < in / 32; ++b) m.scales[size_t(n * (in / 32) + b)] += 15;
  const LinearWeight w = m.weight();
  std::uniform_real_distribution<float> u(0.5f, 1.0f);
  for (int sign : {-1, 1}) {
    std::vector<float> x(static_cast<size_t>(in)), xq(static_cast<size_t>(in));
    for (int64_t k = 0; k < in; ++k)
      x[size_t(k)] = std::ldexp(u(rng) * (rng() % 2 ? 1.0f : -1.0f), k < in / 2 ? 0 : sign * 15);
    quant_fp8(x.data(), in, kActBlock, xq.data());
    Prepared p(xq);
    ASSERT_TRUE(p.ok);
    ASSERT_GE(p.act.exp_max - p.act.exp_min, 15);
    std::vector<float> y(static_cast<size_t>(w.out), -1.0f);
    for (int64_t n = 0; n < w.out; ++n) {
      const bool taken = avx512::fp4_int_row(w, p.act, n, y.data(), false);
      ASSERT_EQ(taken, sign < 0) << "out " << n;
      if (taken) ASSERT_EQ(bits(y[size_t(n)]), bits(reference(w, xq, n, false))) << "out " << n;
      else ASSERT_EQ(y[size_t(n)], -1.0f);
    }
  }
}

// Lane 0 of the canonical dot adds 2^a + 2^b - 2^a (columns 0, 32, 64: blocks 0, 1, 2): with
// a - b = 60 the first addition rounds and the result is 0, not 2^b. The route must refuse that
// row; at the span its condition allows (53 - 27 - log2(128 blocks) = 19) it must take the row.
TEST(Fp4IntRoute, RefusesARowWhoseCanonicalDotRounds) {
  const int64_t in = 4096;
  if (!route_available(in)) GTEST_SKIP() << "AVX-512 with VBMI not active";
  for (int gap : {60, 20, 19}) {
    Fp4Matrix m{1, in, std::vector<uint8_t>(size_t(in / 2), 0), std::vector<uint8_t>(size_t(in / 32), 127)};
    m.codes[0] = 0x02;    // column 0: +1.0
    m.codes[16] = 0x02;   // column 32: +1.0
    m.codes[32] = 0x0A;   // column 64: -1.0
    m.scales[0] = m.scales[2] = uint8_t(127 + gap / 2);
    m.scales[1] = uint8_t(127 + gap / 2 - gap);
    std::vector<float> xq(static_cast<size_t>(in), 0.0f);
    xq[0] = xq[32] = xq[64] = 1.0f;
    const LinearWeight w = m.weight();
    Prepared p(xq);
    ASSERT_TRUE(p.ok);
    float y = -1.0f;
    const bool taken = avx512::fp4_int_row(w, p.act, 0, &y, false);
    EXPECT_EQ(taken, gap <= 19) << "gap " << gap;
    const float ref = reference(w, xq, 0, false);
    if (taken) {
      EXPECT_EQ(bits(y), bits(ref)) << "gap " << gap;
    }
    if (gap == 60) {
      EXPECT_EQ(ref, 0.0f);  // the rounding this test is about happens
    }
    float via_linear = -1.0f;
    linear(w, xq.data(), 1, &via_linear, false);  // FP8-quantizing xq changes nothing
    EXPECT_EQ(bits(via_linear), bits(ref)) << "gap " << gap;
  }
}

TEST(Fp4IntRoute, RefusesScalesWhoseFp32ValueOverflows) {
  const int64_t in = 1024;
  if (!route_available(in)) GTEST_SKIP() << "AVX-512 with VBMI not active";
  std::mt19937 rng(5);
  for (int code : {253, 254, 255}) {
    Fp4Matrix m = random_matrix(4, in, 240, 12, rng);
    m.scales[7] = uint8_t(code);  // row 0
    const LinearWeight w = m.weight();
    auto xq = quantized_activation(in, rng);
    Prepared p(xq);
    ASSERT_TRUE(p.ok);
    std::vector<float> y1(4);
    EXPECT_FALSE(avx512::fp4_int_row(w, p.act, 0, y1.data(), false)) << code;
    for (int64_t n = 0; n < 4; ++n) {
      const float ref = reference(w, xq, n, false);
      linear(weight_rows(w, n, 1), xq.data(), 1, y1.data() + n, false);  // one row: the GEMV
      if (std::isnan(ref)) {
        EXPECT_TRUE(std::isnan(y1[size_t(n)])) << code << " row " << n;
      } else {
        EXPECT_EQ(bits(y1[size_t(n)]), bits(ref)) << code << " row " << n;
      }
    }
  }
}

TEST(Fp4IntRoute, RefusesActivationsThatAreNotFp8Quantized) {
  const int64_t in = 512;
  if (!route_available(in)) GTEST_SKIP() << "AVX-512 with VBMI not active";
  std::mt19937 rng(9);
  std::normal_distribution<float> nd;
  std::vector<float> x(static_cast<size_t>(in));
  for (auto& v : x) v = nd(rng);  // 24-bit significands: more than 18 bits below a chunk's amax
  EXPECT_FALSE(Prepared(x).ok);
  auto xq = quantized_activation(in, rng);
  xq[300] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(Prepared(xq).ok);
  xq[300] = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(Prepared(xq).ok);
  // and an unquantized activation (act_quant = false) still gets the reference's bits
  Fp4Matrix m = random_matrix(8, in, 120, 6, rng);
  LinearWeight w = m.weight();
  w.act_quant = false;
  std::vector<float> y(8);
  for (int64_t n = 0; n < 8; ++n) {
    linear(weight_rows(w, n, 1), x.data(), 1, y.data() + n, true);
    EXPECT_EQ(bits(y[size_t(n)]), bits(reference(w, x, n, true))) << n;
  }
}

// Through linear(): one activation row over many rows and both bf16 rounding modes, threads on.
TEST(Fp4IntRoute, LinearGivesTheReferenceBitsForWideAndNarrowScaleSpans) {
  const int64_t in = 2048;
  if (!route_available(in)) GTEST_SKIP() << "AVX-512 with VBMI not active";
  std::mt19937 rng(17);
  for (int span : {4, 18, 40}) {  // 40: most rows refused, each by its own check
    const Fp4Matrix m = random_matrix(300, in, 100, span, rng);
    const LinearWeight w = m.weight();
    std::vector<float> x(static_cast<size_t>(in));
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (auto& v : x) v = std::ldexp(u(rng), int(rng() % 16) - 8);
    std::vector<float> xq(static_cast<size_t>(in)), y(size_t(w.out));
    quant_fp8(x.data(), in, kActBlock, xq.data());
    for (bool rb : {false, true}) {
      linear(w, x.data(), 1, y.data(), rb);
      for (int64_t n = 0; n < w.out; ++n)
        ASSERT_EQ(bits(y[size_t(n)]), bits(reference(w, xq, n, rb))) << "span " << span << " row " << n;
    }
  }
}

// Several activation rows take the route per (weight row, activation row) in groups of
// kIntRouteRows: 1 to 37 rows (three groups), one row not FP8-quantized (refused as a whole),
// a quarter of the weight rows beyond the span condition (refused per pair), both roundings.
TEST(Fp4IntRoute, SeveralActivationRowsGiveTheReferenceBits) {
  const int64_t in = 1024;
  if (!route_available(in)) GTEST_SKIP() << "AVX-512 with VBMI not active";
  std::mt19937 rng(23);
  Fp4Matrix m = random_matrix(70, in, 118, 8, rng);
  for (int64_t n = 0; n < m.out; n += 4) m.scales[size_t(n * (in / 32) + 3)] = 200;  // span 82
  LinearWeight w = m.weight();
  w.act_quant = false;  // the test quantizes all rows but one itself
  for (int64_t rows : {1, 2, 5, 16, 17, 37}) {
    std::vector<float> x;
    for (int64_t r = 0; r < rows; ++r) {
      auto xr = quantized_activation(in, rng);
      if (r == 3) {  // this row as given: 24-bit significands
        std::normal_distribution<float> nd;
        for (auto& v : xr) v = nd(rng);
      }
      x.insert(x.end(), xr.begin(), xr.end());
    }
    std::vector<float> y(static_cast<size_t>(rows * w.out)), xr(static_cast<size_t>(in));
    for (bool rb : {false, true}) {
      linear(w, x.data(), rows, y.data(), rb);
      for (int64_t r = 0; r < rows; ++r) {
        xr.assign(x.begin() + r * in, x.begin() + (r + 1) * in);
        for (int64_t n = 0; n < w.out; ++n)
          ASSERT_EQ(bits(y[size_t(r * w.out + n)]), bits(reference(w, xr, n, rb))) << "rows " << rows << " row " << r << " out " << n;
      }
    }
  }
}

}  // namespace
}  // namespace strata::kernels
