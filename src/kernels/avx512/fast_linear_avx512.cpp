// The fast profile's linear on AVX-512 (kernels/fast_linear.h): the bf16 route on vdpbf16ps
// itself, the f32 route on vfmadd231ps, both in the definition's lane order and blocks.
//
// Weight rows are decoded kTile at a time into bf16 (or fp32) scratch with their scales applied
// — once a call for the whole batch — and register tiles of MR activation rows × NR weight rows
// then run over every column: MR·NR lanes of block sums and MR·NR running totals in zmm
// registers. bf16 weights whose rows need no padding are read in place.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/numfmt.h"
#include "kernels/aligned_buffer.h"
#include "kernels/fast_linear.h"
#include "kernels/parallel.h"

namespace strata::kernels::avx512 {

namespace {

constexpr int64_t kTile = 12;  // weight rows decoded together; every NR below divides it

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// t[i] += t[i + h] for h = 8, 4, 2, 1: the definition's fold.
inline float fold16(__m512 v) {
  __m256 a = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
  __m128 b = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  b = _mm_add_ps(b, _mm_movehl_ps(b, b));
  b = _mm_add_ss(b, _mm_movehdup_ps(b));
  return _mm_cvtss_f32(b);
}

// MR activation rows × NR weight rows over kpad columns (a multiple of 32 for bf16, 16 for f32,
// zero padded). x rows at x + r·xs, weight rows at w + n·ws (elements of 2 or 4 bytes).
template <int MR, int NR, bool kBf16>
void micro(const void* xv, int64_t xs, const void* wv, int64_t ws, int64_t kpad, float* res) {
  using T = std::conditional_t<kBf16, uint16_t, float>;
  const T* x = static_cast<const T*>(xv);
  const T* w = static_cast<const T*>(wv);
  constexpr int64_t per_vec = kBf16 ? 32 : 16;
  __m512 tot[MR][NR], acc[MR][NR];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 16
    for (int n = 0; n < NR; ++n) tot[r][n] = _mm512_setzero_ps();
  for (int64_t c = 0; c < kpad; c += kFastBlock) {
    const int64_t end = std::min(c + kFastBlock, kpad);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 16
      for (int n = 0; n < NR; ++n) acc[r][n] = _mm512_setzero_ps();
    for (int64_t k = c; k < end; k += per_vec) {
      __m512 xr[MR];
#pragma GCC unroll 16
      for (int r = 0; r < MR; ++r) xr[r] = _mm512_loadu_ps(reinterpret_cast<const float*>(x + r * xs + k));
#pragma GCC unroll 16
      for (int n = 0; n < NR; ++n) {
        const __m512 wn = _mm512_loadu_ps(reinterpret_cast<const float*>(w + n * ws + k));
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r) {
          if constexpr (kBf16)
            acc[r][n] = _mm512_dpbf16_ps(acc[r][n], (__m512bh)xr[r], (__m512bh)wn);
          else
            acc[r][n] = _mm512_fmadd_ps(xr[r], wn, acc[r][n]);
        }
      }
    }
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 16
      for (int n = 0; n < NR; ++n) tot[r][n] = _mm512_add_ps(tot[r][n], acc[r][n]);
  }
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 16
    for (int n = 0; n < NR; ++n) res[r * kTile + n] = fold16(tot[r][n]);
}

// Every activation row of a route against one tile of kTile weight rows: res[r·kTile + n].
template <bool kBf16>
void tile_products(const void* x, int64_t xs, int64_t rows, const void* w, int64_t ws, int64_t kpad, float* res) {
  const int64_t esz = kBf16 ? 2 : 4;
  const auto* xb = static_cast<const char*>(x);
  const auto* wb = static_cast<const char*>(w);
  for (int64_t r = 0; r < rows;) {
    const char* xr = xb + r * xs * esz;
    float* rr = res + r * kTile;
    switch (std::min<int64_t>(rows - r, 4)) {
      case 4:
        for (int n = 0; n < kTile; n += 3) micro<4, 3, kBf16>(xr, xs, wb + n * ws * esz, ws, kpad, rr + n);
        r += 4;
        break;
      case 3:
        for (int n = 0; n < kTile; n += 4) micro<3, 4, kBf16>(xr, xs, wb + n * ws * esz, ws, kpad, rr + n);
        r += 3;
        break;
      case 2:
        for (int n = 0; n < kTile; n += 6) micro<2, 6, kBf16>(xr, xs, wb + n * ws * esz, ws, kpad, rr + n);
        r += 2;
        break;
      default:
        micro<1, 12, kBf16>(xr, xs, wb, ws, kpad, rr);
        r += 1;
        break;
    }
  }
}

// 16 e4m3 codes (one per 32-bit lane) → fp32 values times scale s (s120 = 2^120·s, or 2^120 and
// s in two steps when that would overflow): the bits of e4m3_to_f32(v) · s.
inline __m512 e4m3_scaled(__m512i v, __m512 s120, __m512 s_hi, bool two_step) {
  const __m512i vm = _mm512_and_si512(v, _mm512_set1_epi32(0x7F));
  const __m512i sign = _mm512_and_si512(_mm512_slli_epi32(v, 24), _mm512_set1_epi32(int(0x80000000u)));
  // exponent and mantissa moved into fp32's fields: the value · 2^-120 (subnormal codes become
  // fp32 subnormals, exact); the product restores the bias
  __m512 m = _mm512_castsi512_ps(_mm512_or_si512(_mm512_slli_epi32(vm, 20), sign));
  m = _mm512_mul_ps(m, s120);
  if (two_step) m = _mm512_mul_ps(m, s_hi);
  const __mmask16 nan = _mm512_cmpeq_epi32_mask(vm, _mm512_set1_epi32(0x7F));
  return _mm512_castsi512_ps(
      _mm512_mask_or_epi32(_mm512_castps_si512(m), nan, sign, _mm512_set1_epi32(0x7FC00000)));
}

// The weight's row r as bf16 (decode_weight_bf16's bits), zero padded to k32.
void decode_row_bf16(const LinearWeight& w, int64_t r, uint16_t* dst, int64_t k32) {
  const int64_t in = w.in;
  if (w.format == WeightFormat::bf16) {
    std::memcpy(dst, static_cast<const uint16_t*>(w.data) + r * in, size_t(in) * 2);
  } else if (w.format == WeightFormat::fp8) {
    const uint8_t* p = static_cast<const uint8_t*>(w.data) + r * in;
    const uint8_t* sc = w.scale + (r / 128) * ((in + 127) / 128);
    for (int64_t c = 0; c < in; c += 32) {
      const uint8_t e = sc[c / 128];
      const bool two_step = e >= 127 + 8;
      const __m512 s = _mm512_set1_ps(e8m0_to_f32(e));
      const __m512 s120 = two_step ? _mm512_set1_ps(0x1p120f) : _mm512_mul_ps(s, _mm512_set1_ps(0x1p120f));
      const __mmask32 m = in - c >= 32 ? ~__mmask32(0) : __mmask32((1u << (in - c)) - 1u);
      const __m256i b = _mm256_maskz_loadu_epi8(m, p + c);
      const __m512 lo = e4m3_scaled(_mm512_cvtepu8_epi32(_mm256_castsi256_si128(b)), s120, s, two_step);
      const __m512 hi = e4m3_scaled(_mm512_cvtepu8_epi32(_mm256_extracti128_si256(b, 1)), s120, s, two_step);
      _mm512_mask_storeu_epi16(dst + c, m, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
    }
  } else {  // fp4: in % 32 == 0 (its scale block)
    const uint8_t* p = static_cast<const uint8_t*>(w.data) + r * (in / 2);
    const uint8_t* sc = w.scale + r * (in / 32);
    alignas(64) float lut[16];
    for (int i = 0; i < 16; ++i) lut[i] = e2m1_to_f32(uint8_t(i));
    const __m512 values = _mm512_load_ps(lut);
    const __m512i first = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i second = _mm512_add_epi32(first, _mm512_set1_epi32(8));
    for (int64_t c = 0; c < in; c += 32) {
      const __m512 s = _mm512_set1_ps(e8m0_to_f32(sc[c / 32]));
      const __m512i bytes = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + c / 2)));
      const __m512i lo = _mm512_and_si512(bytes, _mm512_set1_epi32(0xF)), hi = _mm512_srli_epi32(bytes, 4);
      const __m512 v0 = _mm512_mul_ps(_mm512_permutexvar_ps(_mm512_permutex2var_epi32(lo, first, hi), values), s);
      const __m512 v1 = _mm512_mul_ps(_mm512_permutexvar_ps(_mm512_permutex2var_epi32(lo, second, hi), values), s);
      _mm512_storeu_si512(dst + c, (__m512i)_mm512_cvtne2ps_pbh(v1, v0));
    }
  }
  std::fill(dst + in, dst + k32, uint16_t(0));
}

void decode_row_f32(const LinearWeight& w, int64_t r, float* dst, int64_t k16) {
  if (w.format == WeightFormat::bf16) {
    const uint16_t* p = static_cast<const uint16_t*>(w.data) + r * w.in;
    for (int64_t k = 0; k < w.in; ++k) dst[k] = bf16_to_f32(p[k]);
  } else {
    kernels::dequant_row(w, r, dst);  // the scalar decode: e4m3 NaN codes as the portable paths give them
  }
  std::fill(dst + w.in, dst + k16, 0.0f);
}

// One route's rows (gathered: x rows × kpad, their indices into y in `idx`) against all weights.
template <bool kBf16>
void route_product(const LinearWeight& w, const void* x, const std::vector<int64_t>& idx, float* y, bool rb) {
  const int64_t rows = int64_t(idx.size()), out = w.out, in = w.in;
  const int64_t kpad = round_up(in, kBf16 ? 32 : 16);
  // rows already in the layout the kernel reads: read them where they are
  const bool in_place = kBf16 ? (w.format == WeightFormat::bf16 && in == kpad)
                              : (w.format == WeightFormat::f32 && in == kpad);
  const int64_t tiles = (out + kTile - 1) / kTile;
  const int64_t threads = num_threads();
  const int64_t grain = std::max<int64_t>(1, tiles / (8 * threads));
  const int64_t min_tiles = std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(1, kTile * in * rows));
  parallel_for_dynamic(tiles, min_tiles, grain, [&](int64_t tb, int64_t te) {
    thread_local AlignedBuffer<uint16_t> wb;
    thread_local AlignedBuffer<float> wf;
    thread_local std::vector<float> res;
    res.resize(size_t(rows * kTile));
    for (int64_t t = tb; t < te; ++t) {
      const int64_t o0 = t * kTile, n = std::min(kTile, out - o0);
      const void* tile;
      if (in_place && n == kTile) {
        tile = static_cast<const char*>(w.data) + o0 * in * (kBf16 ? 2 : 4);
      } else if constexpr (kBf16) {
        wb.reserve(size_t(kTile * kpad));
        for (int64_t j = 0; j < kTile; ++j) {
          if (j < n)
            decode_row_bf16(w, o0 + j, wb.data() + j * kpad, kpad);
          else
            std::fill(wb.data() + j * kpad, wb.data() + (j + 1) * kpad, uint16_t(0));
        }
        tile = wb.data();
      } else {
        wf.reserve(size_t(kTile * kpad));
        for (int64_t j = 0; j < kTile; ++j) {
          if (j < n)
            decode_row_f32(w, o0 + j, wf.data() + j * kpad, kpad);
          else
            std::fill(wf.data() + j * kpad, wf.data() + (j + 1) * kpad, 0.0f);
        }
        tile = wf.data();
      }
      const int64_t ws = (in_place && n == kTile) ? in : kpad;
      tile_products<kBf16>(x, kpad, rows, tile, ws, kpad, res.data());
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < n; ++j) {
          const float v = res[size_t(r * kTile + j)];
          y[idx[size_t(r)] * out + o0 + j] = rb ? round_bf16(v) : v;
        }
    }
  });
}

}  // namespace

void fast_linear(const LinearWeight& w, const float* x, int64_t rows, const uint8_t* bf16_rows, float* y, bool rb) {
  const int64_t in = w.in, k32 = round_up(in, 32), k16 = round_up(in, 16);
  std::vector<int64_t> bi, fi;
  for (int64_t r = 0; r < rows; ++r) (bf16_rows[r] ? bi : fi).push_back(r);
  if (!bi.empty()) {
    AlignedBuffer<uint16_t> xb;
    xb.reserve(size_t(int64_t(bi.size()) * k32));
    for (size_t j = 0; j < bi.size(); ++j) {
      const float* xr = x + bi[j] * in;
      uint16_t* d = xb.data() + int64_t(j) * k32;
      for (int64_t k = 0; k < in; ++k) d[k] = uint16_t(std::bit_cast<uint32_t>(xr[k]) >> 16);
      std::fill(d + in, d + k32, uint16_t(0));
    }
    route_product<true>(w, xb.data(), bi, y, rb);
  }
  if (!fi.empty()) {
    AlignedBuffer<float> xf;
    xf.reserve(size_t(int64_t(fi.size()) * k16));
    for (size_t j = 0; j < fi.size(); ++j) {
      std::copy(x + fi[j] * in, x + fi[j] * in + in, xf.data() + int64_t(j) * k16);
      std::fill(xf.data() + int64_t(j) * k16 + in, xf.data() + int64_t(j + 1) * k16, 0.0f);
    }
    route_product<false>(w, xf.data(), fi, y, rb);
  }
}

}  // namespace strata::kernels::avx512
