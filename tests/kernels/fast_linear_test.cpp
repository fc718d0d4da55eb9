// The fast profile's linear (kernels/fast_linear.h): every ISA's kernel gives the definition's
// bits (fast_dot_reference, itself checked against the emulated instruction lane by lane), for
// every weight format, both routes, odd sizes and batch sizes; outputs do not depend on the batch
// or the thread count; and the results stay close to the exact sums.
#include "kernels/fast_linear.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/numerics.h"
#include "core/numfmt.h"
#include "kernels/aligned_buffer.h"
#include "kernels/dot.h"
#include "kernels/dpbf16.h"
#include "kernels/parallel.h"
#include "kernels/quant.h"

namespace strata::kernels {
namespace {

struct Weight {
  LinearWeight view;
  std::vector<uint8_t> bytes, scale;
};

// A random weight of `format`, out × in; scale bytes in [lo, lo + 4).
Weight make_weight(WeightFormat format, int64_t out, int64_t in, uint32_t seed, int scale_lo = 120) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd;
  Weight w;
  w.view.format = format;
  w.view.out = out;
  w.view.in = in;
  switch (format) {
    case WeightFormat::fp8:
      w.bytes.resize(size_t(out * in));
      for (auto& b : w.bytes) { b = uint8_t(rng()); if ((b & 0x7F) == 0x7F) b = 0x3F; }
      w.scale.resize(size_t((out + 127) / 128 * ((in + 127) / 128)));
      break;
    case WeightFormat::fp4:
      w.bytes.resize(size_t(out * in / 2));
      for (auto& b : w.bytes) b = uint8_t(rng());
      w.scale.resize(size_t(out * in / 32));
      break;
    case WeightFormat::bf16:
      w.bytes.resize(size_t(out * in * 2));
      for (int64_t i = 0; i < out * in; ++i) {
        const uint16_t h = f32_to_bf16(nd(rng) * 0.05f);
        std::memcpy(w.bytes.data() + 2 * i, &h, 2);
      }
      break;
    case WeightFormat::f32:
      w.bytes.resize(size_t(out * in * 4));
      for (int64_t i = 0; i < out * in; ++i) {
        const float f = nd(rng) * 0.05f;
        std::memcpy(w.bytes.data() + 4 * i, &f, 4);
      }
      break;
  }
  for (auto& s : w.scale) s = uint8_t(scale_lo + int(rng() % 4));
  w.view.data = w.bytes.data();
  w.view.scale = w.scale.empty() ? nullptr : w.scale.data();
  return w;
}

// Activation rows: bf16 values, FP8-quantized ones (quantized weights), or plain fp32;
// bf16_wide spreads the bf16 values over 2^±20, so fp32 sums round and their order shows.
enum class Act { bf16, fp8, f32, bf16_wide };
std::vector<float> make_x(Act kind, int64_t rows, int64_t in, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd;
  std::vector<float> x(size_t(rows * in));
  for (auto& v : x) v = nd(rng);
  if (kind == Act::bf16_wide)
    for (auto& v : x) v = round_bf16(std::ldexp(v, int(rng() % 41) - 20));
  if (kind == Act::bf16)
    for (auto& v : x) v = round_bf16(v);
  if (kind == Act::fp8)
    for (int64_t r = 0; r < rows; ++r) quant_fp8(x.data() + r * in, in, kActBlock, x.data() + r * in);
  return x;
}

std::vector<Isa> isas() {
  std::vector<Isa> v{Isa::scalar};
  if (int(detected_isa()) >= int(Isa::avx2)) v.push_back(Isa::avx2);
  if (detected_isa() == Isa::avx512) v.push_back(Isa::avx512);
  return v;
}

uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }

// Every ISA against the definition, bit for bit.
void expect_definition(const Weight& w, const float* x, int64_t rows, bool rb) {
  const LinearWeight& v = w.view;
  for (Isa isa : isas()) {
    std::vector<float> y(size_t(rows * v.out), -1.0f);
    fast_linear_isa(isa, v, x, rows, y.data(), rb);
    int bad = 0;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t n = 0; n < v.out; ++n) {
        float want = fast_dot_reference(v, n, x + r * v.in);
        if (rb) want = round_bf16(want);
        const float got = y[size_t(r * v.out + n)];
        if (bits(got) != bits(want) && bad++ < 3)
          ADD_FAILURE() << isa_name(isa) << " row " << r << " out " << n << ": " << got << " vs " << want;
      }
    EXPECT_EQ(bad, 0) << isa_name(isa) << " rows " << rows << " in " << v.in;
  }
}
void expect_definition(const Weight& w, const std::vector<float>& x, int64_t rows, bool rb) {
  expect_definition(w, x.data(), rows, rb);
}

TEST(FastLinear, ReferenceIsTheEmulatedInstructionLaneByLane) {
  // the bf16 route of one output, recomputed from dpbf16_accumulate's own lane walk
  const Weight w = make_weight(WeightFormat::bf16, 1, 384, 3);
  const auto x = make_x(Act::bf16, 1, 384, 4);
  std::vector<uint16_t> xb(384), wb(384);
  for (int k = 0; k < 384; ++k) xb[size_t(k)] = uint16_t(bits(x[size_t(k)]) >> 16);
  decode_weight_bf16(w.view, 0, wb.data());
  float total[16] = {};
  for (int c = 0; c < 384; c += 128) {
    float acc[16] = {};
    dpbf16_accumulate(acc, xb.data() + c, wb.data() + c, 16, 4);
    for (int i = 0; i < 16; ++i) total[i] += acc[i];
  }
  for (int h = 8; h >= 1; h /= 2)
    for (int i = 0; i < h; ++i) total[i] += total[i + h];
  EXPECT_EQ(bits(total[0]), bits(fast_dot_reference(w.view, 0, x.data())));
}

TEST(FastLinear, EveryIsaGivesTheDefinitionsBits) {
  struct Case { WeightFormat f; Act a; int64_t out, in; };
  const Case cases[] = {
      {WeightFormat::fp8, Act::fp8, 40, 256},  {WeightFormat::fp8, Act::bf16, 29, 200},
      {WeightFormat::fp8, Act::bf16, 13, 160}, {WeightFormat::fp4, Act::fp8, 37, 384}, {WeightFormat::fp4, Act::bf16, 11, 224},
      {WeightFormat::bf16, Act::bf16, 50, 96}, {WeightFormat::bf16, Act::bf16, 25, 70},
      {WeightFormat::bf16, Act::f32, 27, 136}, {WeightFormat::bf16, Act::f32, 35, 144},
      {WeightFormat::f32, Act::f32, 26, 100},
      {WeightFormat::fp8, Act::f32, 14, 128},  {WeightFormat::fp4, Act::f32, 12, 64},
      // one activation row takes two blocks at a time: whole pairs, then a block, then a part
      {WeightFormat::fp4, Act::fp8, 9, 512},   {WeightFormat::bf16, Act::bf16, 21, 416},
      {WeightFormat::fp4, Act::bf16_wide, 8, 640}, {WeightFormat::bf16, Act::bf16_wide, 12, 768},
  };
  uint32_t seed = 10;
  for (const Case& c : cases)
    for (int64_t rows : {1, 2, 3, 4, 5, 8, 9, 12, 16, 17}) {  // the few-rows kernels to 16, tiles after
      const Weight w = make_weight(c.f, c.out, c.in, seed++);
      const auto x = make_x(c.a, rows, c.in, seed++);
      expect_definition(w, x, rows, rows % 2 == 0);
    }
}

TEST(FastLinear, F32WeightsReadAlignedRowsInPlace) {
  // rows a multiple of 16 wide and 64-byte aligned are read where they lie, others copied first
  const Weight w = make_weight(WeightFormat::f32, 24, 160, 5);
  for (int64_t rows : {1, 4, 17, 40}) {
    const auto x = make_x(Act::f32, rows, 160, uint32_t(6 + rows));
    AlignedBuffer<float> buf(size_t(rows * 160 + 16));
    for (int64_t skip : {0, 1}) {
      std::copy(x.begin(), x.end(), buf.data() + skip);
      expect_definition(w, buf.data() + skip, rows, rows % 2 == 0);
    }
  }
}

TEST(FastLinear, MixedRoutesInOneBatch) {
  const Weight w = make_weight(WeightFormat::bf16, 30, 160, 1);
  auto x = make_x(Act::bf16, 6, 160, 2);
  const auto xf = make_x(Act::f32, 6, 160, 3);
  for (int64_t r : {1, 4}) std::copy(xf.begin() + r * 160, xf.begin() + (r + 1) * 160, x.begin() + r * 160);
  EXPECT_FALSE(fast_row_is_bf16(w.view, x.data() + 160, 160));
  EXPECT_TRUE(fast_row_is_bf16(w.view, x.data(), 160));
  expect_definition(w, x, 6, false);
}

// The one-hot rows of eye (n × n) also a few at a time: every shape of the few-rows kernels.
void expect_one_hot_in_few_rows(const Weight& w, const std::vector<float>& eye, int64_t n) {
  for (int64_t step : {1, 3, 8, 16})
    for (int64_t k = 0; k < n; k += step) {
      const int64_t rows = std::min(step, n - k);
      expect_definition(w, std::vector<float>(eye.begin() + k * n, eye.begin() + (k + rows) * n), rows, false);
    }
}

TEST(FastLinear, ScalesAtTheRangeLimitsAndSpecialCodes) {
  // FP8 scale bytes from 0 (2^-127, subnormal) to 2^8 and beyond: decoded values that flush,
  // that need the two-step scaling, and every e4m3 code including the NaNs
  for (int lo : {0, 2, 100, 133, 136, 250}) {
    Weight w = make_weight(WeightFormat::fp8, 8, 256, uint32_t(lo));
    for (size_t i = 0; i < 256; ++i) w.bytes[i] = uint8_t(i);  // row 0: every code
    for (auto& s : w.scale) s = uint8_t(lo);
    std::vector<uint16_t> want(256);
    decode_weight_bf16(w.view, 0, want.data());
    for (int i = 0; i < 256; ++i) {
      float v = e4m3_to_f32(uint8_t(i)) * e8m0_to_f32(uint8_t(lo));
      uint16_t h = (bits(v) & 0x7F800000u) == 0 ? uint16_t((bits(v) >> 16) & 0x8000u) : f32_to_bf16(v);
      ASSERT_EQ(want[size_t(i)], h) << "code " << i << " scale " << lo;
    }
    const auto x = make_x(Act::fp8, 3, 256, 5);
    expect_definition(w, x, 3, false);
    expect_definition(w, x, 1, false);  // the one-row kernels
    // one-hot activation rows: each output is one decoded weight value, bit for bit
    std::vector<float> eye(256 * 256, 0.0f);
    for (int k = 0; k < 256; ++k) eye[size_t(k * 256 + k)] = 1.0f;
    expect_definition(w, eye, 256, false);
    expect_one_hot_in_few_rows(w, eye, 256);
  }
  for (int lo : {0, 1, 2, 3, 126, 200, 252, 253, 254, 255}) {
    Weight w = make_weight(WeightFormat::fp4, 8, 128, uint32_t(lo), lo);
    for (size_t i = 0; i < 64; ++i) w.bytes[i] = uint8_t(i * 17 + 3);  // row 0: every nibble, both places
    for (auto& s : w.scale) s = uint8_t(lo);
    expect_definition(w, make_x(Act::fp8, 2, 128, 6), 2, false);
    expect_definition(w, make_x(Act::fp8, 1, 128, 7), 1, false);
    std::vector<float> eye(128 * 128, 0.0f);
    for (int k = 0; k < 128; ++k) eye[size_t(k * 128 + k)] = 1.0f;
    expect_definition(w, eye, 128, false);
    expect_one_hot_in_few_rows(w, eye, 128);
  }
}

TEST(FastLinear, OutputsIndependentOfBatchAndThreads) {
  // 40 rows take the tiles; 1, 5 and 11 of them the few-rows kernels
  for (WeightFormat f : {WeightFormat::fp8, WeightFormat::fp4, WeightFormat::bf16}) {
    const Weight w = make_weight(f, 300, 512, 21);
    const int64_t rows = 40;
    const auto x = make_x(Act::fp8, rows, 512, 22);
    std::vector<float> all(size_t(rows * 300));
    fast_linear(w.view, x.data(), rows, all.data(), true);
    for (int threads : {1, 2, 3}) {
      set_num_threads(threads);
      for (int64_t part : {1, 5, 11})
        for (int64_t r = 0; r + part <= rows; r += part + 3) {
          std::vector<float> some(size_t(part * 300));
          fast_linear(w.view, x.data() + r * 512, part, some.data(), true);
          for (int64_t n = 0; n < part * 300; ++n)
            ASSERT_EQ(bits(some[size_t(n)]), bits(all[size_t(r * 300 + n)])) << int(f) << " part " << part;
        }
    }
    set_num_threads(0);
  }
}

TEST(FastLinear, CloseToTheExactSum) {
  // fp32 accumulation in blocks: within a few fp32 ulps of Σ|terms| of the exact sum
  for (WeightFormat f : {WeightFormat::fp8, WeightFormat::fp4, WeightFormat::bf16, WeightFormat::f32}) {
    const Weight w = make_weight(f, 64, 1024, 31);
    const Act a = f == WeightFormat::bf16 ? Act::bf16 : f == WeightFormat::f32 ? Act::f32 : Act::fp8;
    const auto x = make_x(a, 2, 1024, 32);
    std::vector<float> y(128), row(1024);
    fast_linear(w.view, x.data(), 2, y.data(), false);
    double worst = 0;
    for (int64_t n = 0; n < 64; ++n) {
      dequant_row(w.view, n, row.data());
      for (int64_t r = 0; r < 2; ++r) {
        double ref = 0, mag = 0;
        for (int64_t k = 0; k < 1024; ++k) {
          const double t = double(x[size_t(r * 1024 + k)]) * double(row[size_t(k)]);
          ref += t, mag += std::fabs(t);
        }
        worst = std::max(worst, std::fabs(double(y[size_t(r * 64 + n)]) - ref) / mag);
      }
    }
    // 8 sequential adds a lane a block, 8 blocks, a 4-level fold: ≲ 20 roundings of 2^-24 each
    EXPECT_LT(worst, 20 * 0x1p-24) << int(f);
    EXPECT_GT(worst, 0.0) << "fp32 accumulation should differ from the exact sum somewhere";
  }
}

TEST(FastLinear, LinearFollowsTheActiveProfile) {
  const Weight w = make_weight(WeightFormat::fp8, 32, 256, 41);
  const auto x = make_x(Act::bf16, 2, 256, 42);  // linear() quantizes it
  std::vector<float> exact(64), fast(64), want(64), xq(x);
  for (int64_t r = 0; r < 2; ++r) quant_fp8(x.data() + r * 256, 256, kActBlock, xq.data() + r * 256);
  {
    ScopedNumerics guard(Numerics::exact);
    linear(w.view, x.data(), 2, exact.data(), false);
  }
  {
    ScopedNumerics guard(Numerics::fast);
    linear(w.view, x.data(), 2, fast.data(), false);
  }
  fast_linear(w.view, xq.data(), 2, want.data(), false);
  int differ = 0;
  for (int i = 0; i < 64; ++i) {
    ASSERT_EQ(bits(fast[size_t(i)]), bits(want[size_t(i)]));
    differ += bits(fast[size_t(i)]) != bits(exact[size_t(i)]);
  }
  EXPECT_GT(differ, 0);
}

}  // namespace
}  // namespace strata::kernels
