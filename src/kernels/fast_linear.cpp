// The fast profile's linear (fast_linear.h): the definition written plainly, the scalar and AVX2
// paths (the bf16 unit emulated, kernels/dpbf16.h) and the dispatch to the AVX-512 kernel.
#include "kernels/fast_linear.h"

#include <bit>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/numfmt.h"
#include "kernels/dpbf16.h"
#include "kernels/parallel.h"

namespace strata::kernels {

namespace avx2 {
void fast_fma_lanes(float* acc, const float* x, const float* w, int64_t groups);
}
namespace avx512 {
void fast_linear(const LinearWeight& w, const float* x, int64_t rows, const uint8_t* bf16_rows, float* y, bool rb);
}

namespace {

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// fp32 → bf16 for a decoded weight value: nearest-even, NaN quieted, and a magnitude below 2^-126
// (an fp32 denormal) a zero of its sign, as the bf16 unit would read it.
uint16_t weight_to_bf16(float v) {
  const uint32_t b = std::bit_cast<uint32_t>(v);
  if ((b & 0x7F800000u) == 0) return uint16_t((b >> 16) & 0x8000u);
  return f32_to_bf16(v);
}

float fold16(float* t) {
  for (int64_t h = kFastLanes / 2; h >= 1; h /= 2)
    for (int64_t i = 0; i < h; ++i) t[i] += t[i + h];
  return t[0];
}

void fma_lanes_scalar(float* acc, const float* x, const float* w, int64_t groups) {
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t i = 0; i < kFastLanes; ++i) acc[i] = std::fma(x[g * kFastLanes + i], w[g * kFastLanes + i], acc[i]);
}

using FmaLanesFn = void (*)(float* acc, const float* x, const float* w, int64_t groups);

// One output on the bf16 route: x and w padded with zeros to k32 = in rounded up to 32.
float dot_bf16_route(Dpbf16AccumulateFn acc_fn, const uint16_t* x, const uint16_t* w, int64_t k32) {
  float total[kFastLanes] = {};
  for (int64_t c = 0; c < k32; c += kFastBlock) {
    float acc[kFastLanes] = {};
    acc_fn(acc, x + c, w + c, kFastLanes, std::min<int64_t>(kFastBlock, k32 - c) / 32);
    for (int64_t i = 0; i < kFastLanes; ++i) total[i] += acc[i];
  }
  return fold16(total);
}

// One output on the f32 route: x and w padded with zeros to k16 = in rounded up to 16.
float dot_f32_route(FmaLanesFn fma_fn, const float* x, const float* w, int64_t k16) {
  float total[kFastLanes] = {};
  for (int64_t c = 0; c < k16; c += kFastBlock) {
    float acc[kFastLanes] = {};
    fma_fn(acc, x + c, w + c, std::min<int64_t>(kFastBlock, k16 - c) / kFastLanes);
    for (int64_t i = 0; i < kFastLanes; ++i) total[i] += acc[i];
  }
  return fold16(total);
}

// The weight row for the f32 route: its exact fp32 values, zeros to k16.
void decode_weight_f32(const LinearWeight& w, int64_t r, float* dst, int64_t k16) {
  dequant_row(w, r, dst);
  for (int64_t k = w.in; k < k16; ++k) dst[k] = 0.0f;
}

// Scalar and AVX2: the definition, one output at a time, every weight row decoded once a call.
void fast_linear_portable(Isa isa, const LinearWeight& w, const float* x, int64_t rows, const uint8_t* bf16_rows,
                          float* y, bool rb) {
  const int64_t in = w.in, out = w.out, k32 = round_up(in, 32), k16 = round_up(in, kFastLanes);
  bool any_bf16 = false, any_f32 = false;
  for (int64_t r = 0; r < rows; ++r) (bf16_rows[r] ? any_bf16 : any_f32) = true;
  std::vector<uint16_t> xb(size_t(any_bf16 ? rows * k32 : 0), 0);
  std::vector<float> xf(size_t(any_f32 ? rows * k16 : 0), 0.0f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < in; ++k) {
      const float v = x[r * in + k];
      if (bf16_rows[r])
        xb[size_t(r * k32 + k)] = uint16_t(std::bit_cast<uint32_t>(v) >> 16);
      else
        xf[size_t(r * k16 + k)] = v;
    }
  const Dpbf16AccumulateFn acc_fn = dpbf16_accumulate_fn(isa);
  const FmaLanesFn fma_fn = isa == Isa::scalar ? fma_lanes_scalar : avx2::fast_fma_lanes;
  const int64_t min_rows = std::max<int64_t>(4, (int64_t(1) << 14) / std::max<int64_t>(1, in * rows));
  parallel_for(out, min_rows, [&](int64_t b, int64_t e) {
    std::vector<uint16_t> wb(size_t(any_bf16 ? k32 : 0), 0);
    std::vector<float> wf(size_t(any_f32 ? k16 : 0), 0.0f);
    for (int64_t n = b; n < e; ++n) {
      if (any_bf16) decode_weight_bf16(w, n, wb.data());
      if (any_f32) decode_weight_f32(w, n, wf.data(), k16);
      for (int64_t r = 0; r < rows; ++r) {
        const float v = bf16_rows[r] ? dot_bf16_route(acc_fn, xb.data() + r * k32, wb.data(), k32)
                                     : dot_f32_route(fma_fn, xf.data() + r * k16, wf.data(), k16);
        y[r * out + n] = fast_output(v, rb);
      }
    }
  });
}

}  // namespace

void decode_weight_bf16(const LinearWeight& w, int64_t r, uint16_t* dst) {
  if (w.format == WeightFormat::f32) throw Error("decode_weight_bf16: an f32 weight has no bf16 form");
  if (w.format == WeightFormat::bf16) {
    // the checkpoint's bits: the unit reads a denormal as a zero of its sign, as the decode would
    const uint16_t* p = static_cast<const uint16_t*>(w.data) + r * w.in;
    std::copy(p, p + w.in, dst);
  } else {
    std::vector<float> row(size_t(w.in));
    dequant_row(w, r, row.data());
    for (int64_t k = 0; k < w.in; ++k) dst[k] = weight_to_bf16(row[size_t(k)]);
  }
  for (int64_t k = w.in; k < round_up(w.in, 32); ++k) dst[k] = 0;
}

bool fast_row_is_bf16(const LinearWeight& w, const float* x, int64_t in) {
  if (w.format == WeightFormat::f32) return false;
  for (int64_t k = 0; k < in; ++k)
    if (std::bit_cast<uint32_t>(x[k]) & 0xFFFFu) return false;
  return true;
}

float fast_dot_reference(const LinearWeight& w, int64_t r, const float* x) {
  const int64_t in = w.in;
  float total[kFastLanes] = {};
  if (fast_row_is_bf16(w, x, in)) {
    const int64_t k32 = round_up(in, 32);
    std::vector<uint16_t> wb(static_cast<size_t>(k32)), xb(static_cast<size_t>(k32), 0);
    decode_weight_bf16(w, r, wb.data());
    for (int64_t k = 0; k < in; ++k) xb[size_t(k)] = uint16_t(std::bit_cast<uint32_t>(x[k]) >> 16);
    for (int64_t c = 0; c < k32; c += kFastBlock) {
      float acc[kFastLanes] = {};
      for (int64_t k = c; k < std::min(c + kFastBlock, k32); k += 2) {
        const int64_t lane = (k % 32) / 2;
        acc[lane] = dpbf16_lane(acc[lane], xb[size_t(k)], xb[size_t(k + 1)], wb[size_t(k)], wb[size_t(k + 1)]);
      }
      for (int64_t i = 0; i < kFastLanes; ++i) total[i] += acc[i];
    }
  } else {
    const int64_t k16 = round_up(in, kFastLanes);
    std::vector<float> wf(static_cast<size_t>(k16)), xf(static_cast<size_t>(k16), 0.0f);
    decode_weight_f32(w, r, wf.data(), k16);
    std::copy(x, x + in, xf.begin());
    for (int64_t c = 0; c < k16; c += kFastBlock) {
      float acc[kFastLanes] = {};
      for (int64_t k = c; k < std::min(c + kFastBlock, k16); ++k)
        acc[k % kFastLanes] = std::fma(xf[size_t(k)], wf[size_t(k)], acc[k % kFastLanes]);
      for (int64_t i = 0; i < kFastLanes; ++i) total[i] += acc[i];
    }
  }
  return fast_output(fold16(total), false);
}

void fast_linear_isa(Isa isa, const LinearWeight& w, const float* x, int64_t rows, float* y, bool rb) {
  if (w.empty()) throw Error("linear: weight is missing");
  if (int(isa) > int(detected_isa())) throw Error("fast_linear: this CPU lacks the requested ISA");
  std::vector<uint8_t> bf16_rows(static_cast<size_t>(rows));
  parallel_for(rows, std::max<int64_t>(1, (int64_t(1) << 15) / std::max<int64_t>(1, w.in)), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) bf16_rows[size_t(r)] = fast_row_is_bf16(w, x + r * w.in, w.in);
  });
  if (isa == Isa::avx512) return avx512::fast_linear(w, x, rows, bf16_rows.data(), y, rb);
  fast_linear_portable(isa, w, x, rows, bf16_rows.data(), y, rb);
}

void fast_linear(const LinearWeight& w, const float* x, int64_t rows, float* y, bool rb) {
  fast_linear_isa(active_isa(), w, x, rows, y, rb);
}

}  // namespace strata::kernels
