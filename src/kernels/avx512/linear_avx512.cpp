// AVX-512 linear layers: weight decoding fused with the canonical dot (kernels/dot.h), bit for
// bit the scalar reference (dequant_row, then one dot per output element).
//
// The canonical dot keeps 16 fp64 lanes (column k in lane k % 16) that advance in column order;
// here lanes 0-7 and 8-15 are two fp64 vectors per output, exactly as avx512::dot, so any number
// of outputs can advance side by side without changing a bit of any of them. What changes is the
// work around the dot:
//  * the activation is widened to fp64 once per call (not once per output element);
//  * weights are decoded straight into fp64 registers (never stored as an fp32 row);
//  * one activation row: 4 weight rows at a time — 8 independent FMA chains hide the FMA
//    latency that a single dot (2 chains) is bound by;
//  * several activation rows: 4 weight rows are decoded once into an fp64 panel (L2-resident)
//    and reused by every activation row, 3 rows at a time (24 accumulators).
// Decoders reproduce dequant_row's fp32 value (format × block scale, both in fp32) exactly; the
// e4m3 NaN codes are the one exception, as in dequant_avx512.cpp.
#pragma GCC optimize("fp-contract=off")
#include <immintrin.h>

#include <algorithm>

#include "core/numfmt.h"
#include "kernels/dot.h"
#include "kernels/linear.h"

namespace strata::kernels::avx512 {
namespace {

inline __m512d lo_pd(__m512 v) { return _mm512_cvtps_pd(_mm512_castps512_ps256(v)); }
inline __m512d hi_pd(__m512 v) {
  return _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}

// Each decoder walks one weight row in blocks of kBlock columns (its scale block): begin(kb) at
// each block, then get(k, j, ...) for the 16 columns k = kb + 16·j as fp64 lanes 0-7 and 8-15.
// Branch-free inside a block, so the 4 rows' decoders and accumulators stay in registers.
struct F32Row {
  static constexpr int kBlock = 64;
  const float* p = nullptr;
  F32Row() = default;
  F32Row(const LinearWeight& w, int64_t r) : p(static_cast<const float*>(w.data) + r * w.in) {}
  void begin(int64_t) {}
  void get(int64_t k, int, __m512d& lo, __m512d& hi) {
    lo = _mm512_cvtps_pd(_mm256_loadu_ps(p + k));
    hi = _mm512_cvtps_pd(_mm256_loadu_ps(p + k + 8));
  }
};

struct Bf16Row {
  static constexpr int kBlock = 64;
  const uint16_t* p = nullptr;
  Bf16Row() = default;
  Bf16Row(const LinearWeight& w, int64_t r) : p(static_cast<const uint16_t*>(w.data) + r * w.in) {}
  void begin(int64_t) {}
  void get(int64_t k, int, __m512d& lo, __m512d& hi) {
    const __m512i v = _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + k))), 16);
    const __m512 f = _mm512_castsi512_ps(v);
    lo = lo_pd(f);
    hi = hi_pd(f);
  }
};

struct Fp8Row {
  static constexpr int kBlock = 128;
  const uint8_t* p = nullptr;
  const uint8_t* s = nullptr;
  __m512 sc = _mm512_setzero_ps();
  Fp8Row() = default;
  Fp8Row(const LinearWeight& w, int64_t r)
      : p(static_cast<const uint8_t*>(w.data) + r * w.in), s(w.scale + (r / 128) * ((w.in + 127) / 128)) {}
  void begin(int64_t kb) { sc = _mm512_set1_ps(e8m0_to_f32(s[kb / 128]) * 256.0f); }
  void get(int64_t k, int, __m512d& lo, __m512d& hi) {
    // e4m3 bits moved into f16 position are the value times 2^-8 (subnormals included)
    const __m256i b = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + k)));
    const __m256i h = _mm256_or_si256(_mm256_slli_epi16(_mm256_and_si256(b, _mm256_set1_epi16(0x80)), 8),
                                      _mm256_slli_epi16(_mm256_and_si256(b, _mm256_set1_epi16(0x7F)), 7));
    const __m512 f = _mm512_mul_ps(_mm512_cvtph_ps(h), sc);
    lo = lo_pd(f);
    hi = hi_pd(f);
  }
};

// The 16 e2m1 values, as the scalar reference decodes them, widened to fp64 (codes 0-7, 8-15).
struct E2m1Table {
  alignas(64) float v[16];
  alignas(64) double lo[8], hi[8];
  E2m1Table() {
    for (int i = 0; i < 16; ++i) v[i] = e2m1_to_f32(uint8_t(i));
    for (int i = 0; i < 8; ++i) lo[i] = v[i], hi[i] = v[i + 8];
  }
};
const E2m1Table kE2m1;

// FP4 without a widening shuffle: the 4 bytes of 8 columns are broadcast to every 64-bit lane
// (a load, not a shuffle), lane i shifted right by 4·i so that its low nibble is column i, and
// one two-table permute (which reads only the index's low 4 bits) maps codes to the block's
// scaled values. Per 16 weights: 2 broadcasts, 2 shifts, 2 permutes.
struct Fp4Row {
  static constexpr int kBlock = 32;
  const uint8_t* p = nullptr;
  const uint8_t* s = nullptr;
  __m512d lut_lo = _mm512_setzero_pd(), lut_hi = _mm512_setzero_pd();  // e2m1 codes 0-7, 8-15, scaled
  Fp4Row() = default;
  Fp4Row(const LinearWeight& w, int64_t r)
      : p(static_cast<const uint8_t*>(w.data) + r * (w.in / 2)), s(w.scale + r * (w.in / 32)) {}
  void begin(int64_t kb) {
    const uint8_t e = s[kb / 32];
    if (e < 253) {  // e2m1 · scale is exact in fp64 and (below 2^126) in fp32: scale in fp64
      const __m512d sc = _mm512_set1_pd(double(e8m0_to_f32(e)));
      lut_lo = _mm512_mul_pd(_mm512_load_pd(kE2m1.lo), sc);
      lut_hi = _mm512_mul_pd(_mm512_load_pd(kE2m1.hi), sc);
    } else {  // the scalar reference's fp32 product may overflow to inf: reproduce it
      const __m512 t = _mm512_mul_ps(_mm512_load_ps(kE2m1.v), _mm512_set1_ps(e8m0_to_f32(e)));
      lut_lo = lo_pd(t);
      lut_hi = hi_pd(t);
    }
  }
  static __m512i codes(const uint8_t* q) {
    const __m512i shifts = _mm512_set_epi64(28, 24, 20, 16, 12, 8, 4, 0);
    int32_t d;
    __builtin_memcpy(&d, q, 4);
    return _mm512_srlv_epi64(_mm512_set1_epi32(d), shifts);
  }
  void get(int64_t k, int, __m512d& lo, __m512d& hi) {
    lo = _mm512_permutex2var_pd(lut_lo, codes(p + k / 2), lut_hi);
    hi = _mm512_permutex2var_pd(lut_lo, codes(p + k / 2 + 4), lut_hi);
  }
};

inline float finish(__m512d lo, __m512d hi, bool rb) {
  alignas(64) double l[16];
  _mm512_store_pd(l, lo);
  _mm512_store_pd(l + 8, hi);
  const float v = float(fold16(l));
  return rb ? round_bf16(v) : v;
}

// One activation row: NW weight rows advance together.
template <class Row, int NW>
void gemv_block(const LinearWeight& w, const double* x, float* y, bool rb, int64_t n) {
  Row row[NW];
  __m512d lo[NW], hi[NW];
  for (int i = 0; i < NW; ++i) {
    row[i] = Row(w, n + i);
    lo[i] = _mm512_setzero_pd();
    hi[i] = _mm512_setzero_pd();
  }
  for (int64_t kb = 0; kb < w.in; kb += Row::kBlock) {
    for (int i = 0; i < NW; ++i) row[i].begin(kb);
#pragma GCC unroll 8
    for (int j = 0; j < Row::kBlock / 16; ++j) {
      const int64_t k = kb + 16 * j;
      if (k >= w.in) break;  // a partial last block (in % 16 == 0 always)
      const __m512d xl = _mm512_loadu_pd(x + k), xh = _mm512_loadu_pd(x + k + 8);
#pragma GCC unroll 4
      for (int i = 0; i < NW; ++i) {
        __m512d wl, wh;
        row[i].get(k, j, wl, wh);
        lo[i] = _mm512_fmadd_pd(xl, wl, lo[i]);
        hi[i] = _mm512_fmadd_pd(xh, wh, hi[i]);
      }
    }
  }
  for (int i = 0; i < NW; ++i) y[n + i] = finish(lo[i], hi[i], rb);
}

template <class Row>
void gemv(const LinearWeight& w, const double* x, float* y, bool rb, int64_t nb, int64_t ne) {
  int64_t n = nb;
  for (; n + 4 <= ne; n += 4) gemv_block<Row, 4>(w, x, y, rb, n);
  for (; n < ne; ++n) gemv_block<Row, 1>(w, x, y, rb, n);
}

// NR activation rows × NW decoded weight rows over columns [k0, k1) of the panel (NW rows of
// `in` doubles). Accumulators live in registers for the block and in `acc` between blocks
// (exact: a store and reload does not round); lanes 0-7 are advanced for all outputs, then
// lanes 8-15, so 24 accumulators + 4 weight + 3 activation vectors fit the 32 registers.
template <int NW, int NR>
void panel_kernel(const double* panel, int64_t in, int64_t k0, int64_t k1, const double* x, double* acc) {
  __m512d lo[NR][NW], hi[NR][NW];
  for (int r = 0; r < NR; ++r)
    for (int i = 0; i < NW; ++i) {
      lo[r][i] = _mm512_loadu_pd(acc + (r * NW + i) * 16);
      hi[r][i] = _mm512_loadu_pd(acc + (r * NW + i) * 16 + 8);
    }
  for (int64_t k = k0; k < k1; k += 16) {
    for (int half = 0; half < 2; ++half) {
      __m512d wv[NW], xv[NR];
      for (int i = 0; i < NW; ++i) wv[i] = _mm512_loadu_pd(panel + i * in + k + 8 * half);
      for (int r = 0; r < NR; ++r) xv[r] = _mm512_loadu_pd(x + r * in + k + 8 * half);
      for (int r = 0; r < NR; ++r)
        for (int i = 0; i < NW; ++i) {
          __m512d& a = half ? hi[r][i] : lo[r][i];
          a = _mm512_fmadd_pd(xv[r], wv[i], a);
        }
    }
  }
  for (int r = 0; r < NR; ++r)
    for (int i = 0; i < NW; ++i) {
      _mm512_storeu_pd(acc + (r * NW + i) * 16, lo[r][i]);
      _mm512_storeu_pd(acc + (r * NW + i) * 16 + 8, hi[r][i]);
    }
}

// All activation rows against one panel, in column blocks of kPanelBlock so that the panel's
// block (4 × 256 doubles = 8 KB) stays in L1 while every row group passes over it.
constexpr int64_t kPanelBlock = 256;

template <int NW>
void panel_rows(const double* panel, int64_t in, const double* x, int64_t rows, int64_t out, float* y, bool rb, int64_t n,
                double* acc) {
  std::fill(acc, acc + rows * NW * 16, 0.0);
  for (int64_t k0 = 0; k0 < in; k0 += kPanelBlock) {
    const int64_t k1 = std::min(in, k0 + kPanelBlock);
    int64_t r = 0;
    for (; r + 3 <= rows; r += 3) panel_kernel<NW, 3>(panel, in, k0, k1, x + r * in, acc + r * NW * 16);
    if (rows - r == 2) panel_kernel<NW, 2>(panel, in, k0, k1, x + r * in, acc + r * NW * 16);
    if (rows - r == 1) panel_kernel<NW, 1>(panel, in, k0, k1, x + r * in, acc + r * NW * 16);
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int i = 0; i < NW; ++i) {
      const double* a = acc + (r * NW + i) * 16;
      y[r * out + n + i] = finish(_mm512_loadu_pd(a), _mm512_loadu_pd(a + 8), rb);
    }
}

template <class Row>
void gemm(const LinearWeight& w, const double* x, int64_t rows, float* y, bool rb, int64_t nb, int64_t ne,
          double* panel) {
  const int64_t in = w.in;
  for (int64_t n = nb; n < ne; n += 4) {
    const int nw = int(std::min<int64_t>(4, ne - n));
    for (int i = 0; i < nw; ++i) {
      Row row(w, n + i);
      double* dst = panel + i * in;
      for (int64_t kb = 0; kb < in; kb += Row::kBlock) {
        row.begin(kb);
        for (int j = 0; j < Row::kBlock / 16 && kb + 16 * j < in; ++j) {
          __m512d wl, wh;
          row.get(kb + 16 * j, j, wl, wh);
          _mm512_storeu_pd(dst + kb + 16 * j, wl);
          _mm512_storeu_pd(dst + kb + 16 * j + 8, wh);
        }
      }
    }
    double* acc = panel + 4 * in;
    switch (nw) {
      case 4: panel_rows<4>(panel, in, x, rows, w.out, y, rb, n, acc); break;
      case 3: panel_rows<3>(panel, in, x, rows, w.out, y, rb, n, acc); break;
      case 2: panel_rows<2>(panel, in, x, rows, w.out, y, rb, n, acc); break;
      default: panel_rows<1>(panel, in, x, rows, w.out, y, rb, n, acc); break;
    }
  }
}

template <class Row>
void run(const LinearWeight& w, const double* x, int64_t rows, float* y, bool rb, int64_t nb, int64_t ne, double* panel) {
  if (rows == 1) gemv<Row>(w, x, y, rb, nb, ne);
  else gemm<Row>(w, x, rows, y, rb, nb, ne, panel);
}

}  // namespace

bool linear_supported(const LinearWeight& w) {
  return w.in % (w.format == WeightFormat::fp4 ? 32 : 16) == 0;
}

void linear_range(const LinearWeight& w, const double* x, int64_t rows, float* y, bool rb, int64_t nb, int64_t ne,
                  double* panel) {
  switch (w.format) {
    case WeightFormat::f32: run<F32Row>(w, x, rows, y, rb, nb, ne, panel); break;
    case WeightFormat::bf16: run<Bf16Row>(w, x, rows, y, rb, nb, ne, panel); break;
    case WeightFormat::fp8: run<Fp8Row>(w, x, rows, y, rb, nb, ne, panel); break;
    case WeightFormat::fp4: run<Fp4Row>(w, x, rows, y, rb, nb, ne, panel); break;
  }
}

}  // namespace strata::kernels::avx512
