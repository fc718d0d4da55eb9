// Linear layers for every weight format against a double-precision reference built from the
// dequantized weights, and the canonical dot's order independence from threads and batch.
#include "kernels/linear.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/error.h"
#include "core/numfmt.h"
#include "kernels/aligned_buffer.h"
#include "kernels/dot.h"
#include "kernels/parallel.h"
#include "kernels/quant.h"

namespace strata::kernels {
namespace {

struct Mats {
  int64_t out = 200, in = 256;
  std::vector<uint8_t> fp8, fp8_scale, fp4, fp4_scale;
  std::vector<uint16_t> bf16;
  std::vector<float> f32;
};

Mats make(uint32_t seed) {
  std::mt19937 rng(seed);
  Mats m;
  m.fp8.resize(size_t(m.out * m.in));
  for (auto& b : m.fp8) { b = uint8_t(rng()); if ((b & 0x7F) == 0x7F) b = 0; }
  m.fp8_scale.resize(size_t(((m.out + 127) / 128) * (m.in / 128)));
  for (auto& s : m.fp8_scale) s = uint8_t(120 + rng() % 4);
  m.fp4.resize(size_t(m.out * m.in / 2));
  for (auto& b : m.fp4) b = uint8_t(rng());
  m.fp4_scale.resize(size_t(m.out * m.in / 32));
  for (auto& s : m.fp4_scale) s = uint8_t(122 + rng() % 4);
  std::normal_distribution<float> nd;
  m.bf16.resize(size_t(m.out * m.in));
  m.f32.resize(size_t(m.out * m.in));
  for (size_t i = 0; i < m.bf16.size(); ++i) m.bf16[i] = f32_to_bf16(nd(rng) * 0.05f), m.f32[i] = nd(rng) * 0.05f;
  return m;
}

std::vector<float> input(int64_t rows, int64_t in, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd;
  std::vector<float> x(size_t(rows * in));
  for (auto& v : x) v = round_bf16(nd(rng));
  return x;
}

void check_format(const LinearWeight& w, bool quant_act) {
  const int64_t rows = 3;
  auto x = input(rows, w.in, 11);
  std::vector<float> y(size_t(rows * w.out)), row(size_t(w.in)), xq(x);
  if (quant_act)
    for (int64_t r = 0; r < rows; ++r) quant_fp8(x.data() + r * w.in, w.in, 128, xq.data() + r * w.in);
  linear(w, x.data(), rows, y.data(), false);
  double worst = 0;
  for (int64_t n = 0; n < w.out; ++n) {
    dequant_row(w, n, row.data());
    for (int64_t r = 0; r < rows; ++r) {
      double ref = 0, mag = 0;
      for (int64_t k = 0; k < w.in; ++k) {
        ref += double(xq[size_t(r * w.in + k)]) * double(row[size_t(k)]);
        mag += std::fabs(double(xq[size_t(r * w.in + k)]) * double(row[size_t(k)]));
      }
      // fp64 accumulation rounded once: within half an fp32 ulp of the exact sum (plus the
      // negligible fp64 error), so ≤ 2^-24 relative to Σ|terms|
      double err = std::fabs(double(y[size_t(r * w.out + n)]) - ref) / (mag + 1e-30);
      worst = std::max(worst, err);
    }
  }
  EXPECT_LT(worst, 1e-7);
}

TEST(Linear, Fp8MatchesDequantizedReference) {
  Mats m = make(1);
  check_format({WeightFormat::fp8, m.fp8.data(), m.fp8_scale.data(), m.out, m.in}, true);
}
TEST(Linear, Fp4MatchesDequantizedReference) {
  Mats m = make(2);
  check_format({WeightFormat::fp4, m.fp4.data(), m.fp4_scale.data(), m.out, m.in}, true);
}
TEST(Linear, Bf16AndF32MatchReference) {
  Mats m = make(3);
  check_format({WeightFormat::bf16, m.bf16.data(), nullptr, m.out, m.in}, false);
  check_format({WeightFormat::f32, m.f32.data(), nullptr, m.out, m.in}, false);
}

TEST(Linear, DequantizesFp8BlocksAndFp4Nibbles) {
  // FP8: code 0x38 = 1.0, block scale 2^-3 for rows 128.., columns 0..127
  std::vector<uint8_t> w(size_t(130 * 128), 0x38), s = {127, 124};
  LinearWeight lw{WeightFormat::fp8, w.data(), s.data(), 130, 128};
  std::vector<float> row(128);
  dequant_row(lw, 0, row.data());
  EXPECT_EQ(row[5], 1.0f);
  dequant_row(lw, 129, row.data());
  EXPECT_EQ(row[5], 0.125f);
  // FP4: byte 0x2F: low nibble 0xF = -6 (even column), high 0x2 = 1.0 (odd column); scale 2^1
  std::vector<uint8_t> p(16, 0x2F), ps(1, 128);
  LinearWeight l4{WeightFormat::fp4, p.data(), ps.data(), 1, 32};
  std::vector<float> r4(32);
  dequant_row(l4, 0, r4.data());
  EXPECT_EQ(r4[0], -12.0f);
  EXPECT_EQ(r4[1], 2.0f);
}

// act_quant = false (wo_a): the activation enters as given, not FP8-quantized; each output is
// the canonical dot of the raw activation and the dequantized row, on every path (one and
// several activation rows, any ISA).
TEST(Linear, Fp8WithUnquantizedActivationUsesItAsGiven) {
  Mats m = make(4);
  LinearWeight w{WeightFormat::fp8, m.fp8.data(), m.fp8_scale.data(), m.out, m.in};
  w.act_quant = false;
  std::vector<float> row(static_cast<size_t>(m.in));
  for (int64_t rows : {1, 3}) {
    auto x = input(rows, m.in, 12);
    for (auto& v : x) v *= 1.0f + 0x1p-12f;  // bits FP8 quantization would drop
    std::vector<float> y(size_t(rows * m.out)), yq(y.size());
    linear(w, x.data(), rows, y.data(), true);
    LinearWeight wq = w;
    wq.act_quant = true;
    linear(wq, x.data(), rows, yq.data(), true);
    int differ = 0;
    for (int64_t n = 0; n < m.out; ++n) {
      dequant_row(w, n, row.data());
      for (int64_t r = 0; r < rows; ++r) {
        const float ref = round_bf16(dot(x.data() + r * m.in, row.data(), m.in));
        ASSERT_EQ(std::bit_cast<uint32_t>(y[size_t(r * m.out + n)]), std::bit_cast<uint32_t>(ref)) << rows << " " << n;
        differ += y[size_t(r * m.out + n)] != yq[size_t(r * m.out + n)];
      }
    }
    EXPECT_GT(differ, 0) << "quantizing the activation should change some outputs";
  }
}

// weight_rows: a slice's product is the same rows of the whole product, in every format; an
// FP8 slice off a 128-row scale block is refused.
TEST(Linear, WeightRowsSliceDataAndScales) {
  Mats m = make(6);
  const std::vector<LinearWeight> ws = {{WeightFormat::fp8, m.fp8.data(), m.fp8_scale.data(), m.out, m.in},
                                        {WeightFormat::fp4, m.fp4.data(), m.fp4_scale.data(), m.out, m.in},
                                        {WeightFormat::bf16, m.bf16.data(), nullptr, m.out, m.in},
                                        {WeightFormat::f32, m.f32.data(), nullptr, m.out, m.in}};
  auto x = input(2, m.in, 13);
  for (const auto& w : ws) {
    std::vector<float> all(size_t(2 * m.out));
    linear(w, x.data(), 2, all.data(), false);
    const int64_t r0 = w.format == WeightFormat::fp8 ? 128 : 37, n = m.out - r0 - 5;
    const LinearWeight s = weight_rows(w, r0, n);
    EXPECT_EQ(s.out, n);
    std::vector<float> part(size_t(2 * n));
    linear(s, x.data(), 2, part.data(), false);
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(std::bit_cast<uint32_t>(part[size_t(r * n + i)]), std::bit_cast<uint32_t>(all[size_t(r * m.out + r0 + i)]))
            << "format " << int(w.format) << " row " << i;
  }
  EXPECT_THROW(weight_rows(ws[0], 64, 10), Error);
  EXPECT_THROW(weight_rows(ws[2], 190, 20), Error);
}

TEST(Linear, BitwiseIndependentOfThreadsAndBatch) {
  Mats m = make(4);
  LinearWeight w{WeightFormat::fp8, m.fp8.data(), m.fp8_scale.data(), m.out, m.in};
  auto x = input(5, m.in, 12);
  std::vector<float> batch(size_t(5 * m.out)), single(size_t(m.out));
  set_num_threads(1);
  linear(w, x.data(), 5, batch.data(), true);
  for (int threads : {2, 3, 7}) {
    set_num_threads(threads);
    for (int64_t r = 0; r < 5; ++r) {
      linear(w, x.data() + r * m.in, 1, single.data(), true);
      EXPECT_EQ(std::memcmp(single.data(), batch.data() + r * m.out, size_t(m.out) * 4), 0) << threads << " " << r;
    }
  }
  set_num_threads(0);
}

TEST(Dot, FixedLaneOrder) {
  // 1e20 lands in lane 0 with -1e20 (element 16), so the small terms survive exactly: the
  // canonical order, not a left-to-right sum (which would lose them even in fp64).
  std::vector<float> a(32, 1.0f), b(32, 0.0f);
  b[0] = 1e20f;
  b[16] = -1e20f;
  for (int i = 1; i < 16; ++i) b[size_t(i)] = 1.0f;
  EXPECT_EQ(dot(a.data(), b.data(), 32), 15.0f);
}

}  // namespace
}  // namespace strata::kernels

namespace strata::kernels {
namespace {

TEST(Linear, SimdDequantMatchesScalarBitwise) {
  if (detected_isa() != Isa::avx512) GTEST_SKIP() << "no AVX-512";
  Mats m = make(9);
  for (auto& b : m.fp8)
    if ((b & 0x7F) == 0x7F) b = 0x7E;  // NaN codes excluded (see avx512/dequant_avx512.cpp)
  for (int64_t in : {256, 200}) {  // 200: FP8 tail path
    LinearWeight w8{WeightFormat::fp8, m.fp8.data(), m.fp8_scale.data(), 128, in};
    std::vector<float> a(static_cast<size_t>(in)), b(static_cast<size_t>(in));
    for (int64_t r = 0; r < 128; ++r) {
      dequant_row(w8, r, a.data());
      dequant_fn(Isa::avx512)(w8, r, b.data());
      ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0) << "fp8 row " << r;
    }
  }
  LinearWeight w4{WeightFormat::fp4, m.fp4.data(), m.fp4_scale.data(), m.out, m.in};
  std::vector<float> a(static_cast<size_t>(m.in)), b(static_cast<size_t>(m.in));
  for (int64_t r = 0; r < m.out; ++r) {
    dequant_row(w4, r, a.data());
    dequant_fn(Isa::avx512)(w4, r, b.data());
    ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0) << "fp4 row " << r;
  }
  for (int64_t in : {256, 250}) {  // 250: BF16 tail path
    LinearWeight wb{WeightFormat::bf16, m.bf16.data(), nullptr, 100, in};
    std::vector<float> x(static_cast<size_t>(in)), y(static_cast<size_t>(in));
    for (int64_t r = 0; r < 100; ++r) {
      dequant_row(wb, r, x.data());
      dequant_fn(Isa::avx512)(wb, r, y.data());
      ASSERT_EQ(std::memcmp(x.data(), y.data(), x.size() * 4), 0) << "bf16 row " << r;
    }
  }
}

}  // namespace
}  // namespace strata::kernels

namespace strata::kernels {
namespace {

// The fused AVX-512 products against the scalar reference definition (dequant_row, then one
// canonical dot per output), bitwise: every format, single and several activation rows (the
// GEMV and the panel kernels, every remainder of 4 weight rows and 3 activation rows; FP8 from 4
// to 32 rows in the blocked GEMV, 33 on the panel), lengths
// with and without a 128-column scale-block tail, and f32 data whose magnitudes span ~2^60 so
// that the fp64 sum actually rounds (a wrong lane order would show).
TEST(Linear, FusedAvx512MatchesScalarDefinitionBitwise) {
  if (detected_isa() != Isa::avx512 || active_isa() != Isa::avx512) GTEST_SKIP() << "AVX-512 not active";
  std::mt19937 rng(21);
  const int64_t out = 203;
  for (int64_t in : {256, 208, 1024, 2560}) {  // 2560: 3 rows of FP8 take the blocked GEMV there
    std::vector<uint8_t> fp8(size_t(out * in)), fp8s(size_t(((out + 127) / 128) * ((in + 127) / 128)));
    for (auto& b : fp8) { b = uint8_t(rng()); if ((b & 0x7F) == 0x7F) b = 0x7E; }
    for (auto& s : fp8s) s = uint8_t(118 + rng() % 8);
    std::vector<uint8_t> fp4(size_t(out * in / 2)), fp4s(size_t(out * in / 32));
    for (auto& b : fp4) b = uint8_t(rng());
    for (auto& s : fp4s) s = uint8_t(120 + rng() % 8);
    std::vector<uint16_t> bf(size_t(out * in));
    std::vector<float> f32(size_t(out * in));
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (size_t i = 0; i < f32.size(); ++i) {
      f32[i] = std::ldexp(u(rng), int(rng() % 60) - 30);
      bf[i] = f32_to_bf16(std::ldexp(u(rng), int(rng() % 40) - 20));
    }
    std::vector<LinearWeight> ws = {{WeightFormat::fp8, fp8.data(), fp8s.data(), out, in},
                                    {WeightFormat::bf16, bf.data(), nullptr, out, in},
                                    {WeightFormat::f32, f32.data(), nullptr, out, in}};
    if (in % 32 == 0) ws.push_back({WeightFormat::fp4, fp4.data(), fp4s.data(), out, in});
    for (const auto& w : ws) {
      const bool quantized = w.format == WeightFormat::fp8 || w.format == WeightFormat::fp4;
      if (quantized && in % 128 != 0) continue;  // activation blocks of 128
      for (int64_t rows : {1, 2, 3, 4, 5, 7, 16, 17, 33}) {
        if (in == 2560 && rows != 3) continue;
        std::vector<float> x(size_t(rows * in));
        // (at 2560 small enough for FP8's bits form, |x · scale| < 2^8, which the blocked GEMV needs)
        for (auto& v : x) v = std::ldexp(u(rng), int(rng() % 30) - (in == 2560 ? 25 : 15));
        std::vector<float> xq(x), y(static_cast<size_t>(rows * out)), row(static_cast<size_t>(in));
        if (quantized)
          for (int64_t r = 0; r < rows; ++r) quant_fp8(x.data() + r * in, in, kActBlock, xq.data() + r * in);
        for (bool rb : {false, true}) {
          linear(w, x.data(), rows, y.data(), rb);
          for (int64_t n = 0; n < out; ++n) {
            dequant_row(w, n, row.data());
            for (int64_t r = 0; r < rows; ++r) {
              float ref = dot(xq.data() + r * in, row.data(), in);
              if (rb) ref = round_bf16(ref);
              ASSERT_EQ(std::bit_cast<uint32_t>(y[size_t(r * out + n)]), std::bit_cast<uint32_t>(ref))
                  << "format " << int(w.format) << " in " << in << " rows " << rows << " out " << n << " row " << r;
            }
          }
        }
      }
    }
  }
}

// Few outputs over many activation rows (mHC's mixes, the indexer's head weights): the threads
// split the activation rows, and each thread's share may take another route than the whole
// (FP8 at 40 rows on 2 threads: two 20-row GEMVs, which read the fp64 copy the panel does not
// need). Every output must still be the reference's canonical dot, at any thread count.
TEST(Linear, FewOutputsSplitByActivationRowsGiveTheReferenceBits) {
  std::mt19937 rng(41);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const int64_t out = 24, in = 512;
  std::vector<uint8_t> fp8(size_t(out * in)), fp8s(size_t(in / 128)), fp4(size_t(out * in / 2)), fp4s(size_t(out * in / 32));
  for (auto& b : fp8) { b = uint8_t(rng()); if ((b & 0x7F) == 0x7F) b = 0x7E; }
  for (auto& s : fp8s) s = uint8_t(118 + rng() % 8);
  for (auto& b : fp4) b = uint8_t(rng());
  for (auto& s : fp4s) s = uint8_t(120 + rng() % 8);
  std::vector<uint16_t> bf(size_t(out * in));
  std::vector<float> f32(size_t(out * in));
  for (size_t i = 0; i < f32.size(); ++i) {
    f32[i] = std::ldexp(u(rng), int(rng() % 60) - 30);
    bf[i] = f32_to_bf16(std::ldexp(u(rng), int(rng() % 40) - 20));
  }
  const std::vector<LinearWeight> ws = {{WeightFormat::f32, f32.data(), nullptr, out, in},
                                        {WeightFormat::bf16, bf.data(), nullptr, out, in},
                                        {WeightFormat::fp8, fp8.data(), fp8s.data(), out, in},
                                        {WeightFormat::fp4, fp4.data(), fp4s.data(), out, in}};
  std::vector<float> row(static_cast<size_t>(in));
  for (const auto& w : ws)
    for (int64_t rows : {9, 40, 67}) {
      std::vector<float> x(size_t(rows * in)), y(size_t(rows * out));
      for (auto& v : x) v = std::ldexp(u(rng), int(rng() % 30) - 15);
      std::vector<float> xq(x);
      if (w.format == WeightFormat::fp8 || w.format == WeightFormat::fp4)
        for (int64_t r = 0; r < rows; ++r) quant_fp8(x.data() + r * in, in, kActBlock, xq.data() + r * in);
      for (int threads : {1, 2, 3}) {
        set_num_threads(threads);
        std::fill(y.begin(), y.end(), -1.0f);
        linear(w, x.data(), rows, y.data(), false);
        for (int64_t n = 0; n < out; ++n) {
          dequant_row(w, n, row.data());
          for (int64_t r = 0; r < rows; ++r)
            ASSERT_EQ(std::bit_cast<uint32_t>(y[size_t(r * out + n)]), std::bit_cast<uint32_t>(dot(xq.data() + r * in, row.data(), in)))
                << "format " << int(w.format) << " rows " << rows << " threads " << threads << " out " << n << " row " << r;
        }
      }
    }
  set_num_threads(0);
}

// FP8 block scales at the ends of the e8m0 range: a one-row product puts the scale on the
// activation (exact while e4m3 × scale is exact in fp32, codes <= 246) and falls back to the
// per-weight decoder for a band with a larger one; both must give the reference's bits, and
// so must the panel kernels, where e4m3 × 2^120 and above overflows to inf as in dequant_row
// (the panel's bits form, the scale put back by vscalefpd, takes ranges whose codes are all
// <= 246: trial 0 at that end, trial 1 at code 0, where e4m3 subnormals × 2^-127 are fp32
// subnormals).
TEST(Linear, Fp8ExtremeBlockScalesGiveTheReferenceBits) {
  if (detected_isa() != Isa::avx512 || active_isa() != Isa::avx512) GTEST_SKIP() << "AVX-512 not active";
  std::mt19937 rng(8);
  const int64_t out = 300, in = 384;  // bands of 128, 128 and 44 rows; 3 column blocks
  std::vector<uint8_t> fp8(size_t(out * in));
  for (auto& b : fp8) { b = uint8_t(rng()); if ((b & 0x7F) == 0x7F) b = 0x7E; }
  const uint8_t codes[] = {0, 1, 2, 120, 127, 200, 245, 246, 247, 250, 254};
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int trial = 0; trial < 6; ++trial) {
    std::vector<uint8_t> sc(size_t(3 * 3));
    for (auto& c : sc) c = trial == 0 ? 246 : trial == 1 ? 0 : codes[rng() % std::size(codes)];
    const LinearWeight w{WeightFormat::fp8, fp8.data(), sc.data(), out, in};
    for (int64_t rows : {1, 2, 4, 6, 33}) {  // 4, 6: the blocked GEMV (FP8, 4 to 32 rows); 33: the panel
      std::vector<float> x(size_t(rows * in)), xq(x.size()), y(size_t(rows * out)), row(static_cast<size_t>(in));
      for (auto& v : x) v = std::ldexp(u(rng), int(rng() % 30) - 15);
      for (int64_t r = 0; r < rows; ++r) quant_fp8(x.data() + r * in, in, kActBlock, xq.data() + r * in);
      linear(w, x.data(), rows, y.data(), false);
      for (int64_t n = 0; n < out; ++n) {
        dequant_row(w, n, row.data());
        for (int64_t r = 0; r < rows; ++r) {
          const float ref = dot(xq.data() + r * in, row.data(), in);
          const float got = y[size_t(r * out + n)];
          if (std::isnan(ref)) {
            ASSERT_TRUE(std::isnan(got)) << "trial " << trial << " rows " << rows << " out " << n;
          } else {
            ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(ref))
                << "trial " << trial << " rows " << rows << " out " << n << " row " << r;
          }
        }
      }
    }
  }
}

// The one-row FP8 product has two exact forms: e4m3 bytes moved straight into fp64 bits (the
// value × 2^-1016, with x · scale · 2^1016 on the activation side: finite only while |x · scale|
// < 2^8) and the f16 form for bands beyond that. Activations are placed on both sides of the
// boundary per band (|x · scale| just below 2^8, exactly 2^8, far below), weights include every
// e4m3 code (zeros and subnormals land on fp64 subnormals in the bits form), and one activation
// holds a NaN; every output must be the reference's.
TEST(Linear, Fp8GemvFormsGiveTheReferenceBitsOnBothSidesOfTheirRange) {
  if (detected_isa() != Isa::avx512 || active_isa() != Isa::avx512) GTEST_SKIP() << "AVX-512 not active";
  std::mt19937 rng(12);
  const int64_t out = 384, in = 512;  // 3 bands of 128 rows, 4 column blocks
  std::vector<uint8_t> fp8(size_t(out * in));
  for (size_t i = 0; i < fp8.size(); ++i) {  // every code but the NaNs (kernels differ there: linear_avx512.cpp)
    const auto b = uint8_t(i * 37 % 256);
    fp8[i] = (b & 0x7F) == 0x7F ? 0 : b;
  }
  std::vector<uint8_t> sc(size_t(3 * 4));
  for (auto& c : sc) c = uint8_t(118 + rng() % 6);
  const LinearWeight w{WeightFormat::fp8, fp8.data(), sc.data(), out, in};
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int64_t rows : {1, 2, 3, 6}) {  // 2, 3: the multi-row GEMV, 6: the blocked one; their range over all rows
    for (double edge : {255.0, 256.0, 1.0, 0x1p-30}) {
      for (bool with_nan : {false, true}) {
        // x unquantized (act_quant off): its largest |x · scale| is `edge` in band 1's block 2,
        // in the last row
        LinearWeight wu = w;
        wu.act_quant = false;
        std::vector<float> x(static_cast<size_t>(rows * in)), y(static_cast<size_t>(rows * out));
        std::vector<float> row(static_cast<size_t>(in));
        for (auto& v : x) v = u(rng) * 0.5f;
        const float scale = e8m0_to_f32(sc[1 * 4 + 2]);
        float* last = x.data() + (rows - 1) * in;
        for (int64_t k = 256; k < 384; ++k) last[k] = float(edge / scale) * (k % 2 ? -1.0f : 0.5f);
        if (with_nan) x[77] = std::numeric_limits<float>::quiet_NaN();
        linear(wu, x.data(), rows, y.data(), false);
        for (int64_t n = 0; n < out; ++n) {
          dequant_row(wu, n, row.data());
          for (int64_t r = 0; r < rows; ++r) {
            const float ref = dot(x.data() + r * in, row.data(), in);
            const float got = y[size_t(r * out + n)];
            if (std::isnan(ref)) {
              ASSERT_TRUE(std::isnan(got)) << "edge " << edge << " out " << n;
            } else {
              ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(ref))
                  << "rows " << rows << " edge " << edge << " nan " << with_nan << " out " << n << " row " << r;
            }
          }
        }
      }
    }
  }
}

// The 16 lane sums are folded in one fixed tree (kernels/dot.h fold16); the batched kernels
// fold 8 outputs side by side. Random data almost never tells two trees apart once the sum is
// rounded to fp32, so here every lane holds one exact product drawn from ±2^52, ±2^26, ±1,
// ±2^-20 and 0: big values cancel in some trees and swallow the small ones in others. The test
// first checks that its data tells the canonical tree from a left-to-right fold, then that every
// output of the GEMV and panel kernels is the reference's.
TEST(Linear, LaneSumsFoldInTheCanonicalTree) {
  if (detected_isa() != Isa::avx512 || active_isa() != Isa::avx512) GTEST_SKIP() << "AVX-512 not active";
  std::mt19937 rng(5);
  const float values[] = {0x1p52f, -0x1p52f, 0x1p26f, -0x1p26f, 1.0f, -1.0f, 0x1p-20f, -0x1p-20f, 0.0f};
  const int64_t out = 203;
  // f32 over one 16-column step; bf16 over two and four 32-column steps (its one-row kernel
  // keeps the lanes paired and must put them back before the fold)
  for (const auto& [format, in] : {std::pair{WeightFormat::f32, int64_t(16)}, std::pair{WeightFormat::bf16, int64_t(64)},
                                  std::pair{WeightFormat::bf16, int64_t(128)}}) {
    std::vector<float> wv(size_t(out * in));
    std::vector<uint16_t> wb(wv.size());
    for (size_t i = 0; i < wv.size(); ++i) wv[i] = values[rng() % 9], wb[i] = f32_to_bf16(wv[i]);
    const LinearWeight w{format, format == WeightFormat::f32 ? static_cast<const void*>(wv.data()) : wb.data(), nullptr, out, in};
    int told_apart = 0;
    for (int64_t rows : {1, 2, 3, 4, 17}) {
      std::vector<float> x(size_t(rows * in)), y(size_t(rows * out));
      for (auto& v : x) v = (rng() & 1) ? 1.0f : -1.0f;  // products stay exact
      linear(w, x.data(), rows, y.data(), false);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t n = 0; n < out; ++n) {
          const float ref = dot(x.data() + r * in, wv.data() + n * in, in);
          double seq = 0.0;
          for (int64_t k = 0; k < in; ++k) seq += double(x[size_t(r * in + k)]) * double(wv[size_t(n * in + k)]);
          told_apart += float(seq) != ref;
          ASSERT_EQ(std::bit_cast<uint32_t>(y[size_t(r * out + n)]), std::bit_cast<uint32_t>(ref))
              << "format " << int(format) << " in " << in << " rows " << rows << " row " << r << " out " << n;
        }
    }
    EXPECT_GT(told_apart, 50) << "the data no longer tells fold trees apart";
  }
}

// The panel kernels take the outputs in groups of 6 weight rows and the activation rows in
// passes of at most ~1 MB of fp32 x (row_block in linear_avx512.cpp): every range length of
// outputs (each remainder of 6, on either side of a group) and a row count that needs two passes
// (in = 1024: 255 rows fit a pass, so 301 go as 151 + 150, each with a remainder of 3 or not),
// bitwise against dequant_row + dot, wide-range f32 data.
TEST(Linear, PanelGroupsAndRowPassesGiveTheReferenceBits) {
  if (detected_isa() != Isa::avx512 || active_isa() != Isa::avx512) GTEST_SKIP() << "AVX-512 not active";
  std::mt19937 rng(33);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const int64_t out = 40, in = 1024;
  std::vector<float> wv(size_t(out * in));
  for (auto& v : wv) v = std::ldexp(u(rng), int(rng() % 60) - 30);
  const LinearWeight w{WeightFormat::f32, wv.data(), nullptr, out, in};
  for (int64_t rows : {2, 5, 131, 301}) {
    std::vector<float> x(size_t(rows * in));
    for (auto& v : x) v = std::ldexp(u(rng), int(rng() % 30) - 15);
    std::vector<double> xd(x.size());
    avx512::widen_activation(w, x.data(), rows, xd.data());
    AlignedBuffer<double> panel(size_t(avx512::linear_panel_doubles(in, rows)));
    for (int64_t nb : {int64_t(0), int64_t(7)})
      for (int64_t len = 1; len <= 13; ++len) {
        std::vector<float> y(size_t(rows * out), -1.0f);
        avx512::linear_range(w, xd.data(), x.data(), rows, y.data(), false, nb, nb + len, panel.data());
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t n = nb; n < nb + len; ++n) {
            const float ref = dot(x.data() + r * in, wv.data() + n * in, in);
            ASSERT_EQ(std::bit_cast<uint32_t>(y[size_t(r * out + n)]), std::bit_cast<uint32_t>(ref))
                << "rows " << rows << " outputs [" << nb << ", " << nb + len << ") row " << r << " out " << n;
          }
      }
  }
}

}  // namespace
}  // namespace strata::kernels
