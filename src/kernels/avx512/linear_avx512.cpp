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
//  * several activation rows: 6 weight rows are decoded once into an fp64 panel (L1-resident)
//    and reused by every activation row, 3 rows at a time (18 accumulators per half).
// Decoders reproduce dequant_row's fp32 value (format × block scale, both in fp32) exactly; the
// e4m3 NaN codes are the one exception, as in dequant_avx512.cpp.
#pragma GCC optimize("fp-contract=off")
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "core/numfmt.h"
#include "kernels/avx512/fold8.h"
#include "kernels/avx512/fp4_int.h"
#include "kernels/avx512/vbmi.h"
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
  static constexpr int64_t kBlockBytes = 256;  // of one weight row
  const float* p = nullptr;
  F32Row() = default;
  F32Row(const LinearWeight& w, int64_t r) : p(static_cast<const float*>(w.data) + r * w.in) {}
  const void* at(int64_t k) const { return p + k; }
  void begin(int64_t) {}
  void get(int64_t k, int, __m512d& lo, __m512d& hi) {
    lo = _mm512_cvtps_pd(_mm256_loadu_ps(p + k));
    hi = _mm512_cvtps_pd(_mm256_loadu_ps(p + k + 8));
  }
};

struct Bf16Row {
  static constexpr int kBlock = 64;
  static constexpr int64_t kBlockBytes = 128;
  const uint16_t* p = nullptr;
  Bf16Row() = default;
  Bf16Row(const LinearWeight& w, int64_t r) : p(static_cast<const uint16_t*>(w.data) + r * w.in) {}
  const void* at(int64_t k) const { return p + k; }
  void begin(int64_t) {}
  void get(int64_t k, int, __m512d& lo, __m512d& hi) {
    const __m512i v = _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + k))), 16);
    const __m512 f = _mm512_castsi512_ps(v);
    lo = lo_pd(f);
    hi = hi_pd(f);
  }
};

// bf16 for the one-row GEMV, without a widening shuffle: 16 bf16 (32 bytes) are 8 dwords whose low
// halves (even columns) become fp32 by a shift left 16 and whose high halves (odd columns) are
// fp32 already once the low half is masked off; one conversion each to fp64. lo then holds the
// even columns k, k+2, ..., k+14 and hi the odd ones, so x must come in that order
// (widen_activation) and the lane sums go back to the canonical order before the fold
// (kPairedLanes: lo lane j is canonical lane 2j, hi lane j lane 2j + 1). Each lane still sums its
// own columns in order: the same bits as Bf16Row. Per 16 weights: a shift, a mask and two
// conversions, against a widening shuffle, a shift, an extract and two conversions. For one
// activation row (BM_Bf16HeadL2/1, one thread: 17.8-18.1 -> 21.9-22.3 GMAC/s; from memory with
// two threads the same ~60 GB/s, the memory's bound, and +7-9% while another process held a CPU;
// the head in the model the same 53-54 GB/s); at 4 rows it was 2-4% slower from L2 (the FMAs
// bound there), so 2-4 rows keep Bf16Row.
struct Bf16PairRow {
  static constexpr int kBlock = 64;
  static constexpr int64_t kBlockBytes = 128;
  static constexpr bool kPairedLanes = true;
  const uint16_t* p = nullptr;
  Bf16PairRow() = default;
  Bf16PairRow(const LinearWeight& w, int64_t r) : p(static_cast<const uint16_t*>(w.data) + r * w.in) {}
  const void* at(int64_t k) const { return p + k; }
  void begin(int64_t) {}
  void get(int64_t k, int, __m512d& lo, __m512d& hi) {
    __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + k));
    asm("" : "+v"(v));  // one load, not one folded into each of the shift and the mask
    lo = _mm512_cvtps_pd(_mm256_castsi256_ps(_mm256_slli_epi32(v, 16)));
    hi = _mm512_cvtps_pd(_mm256_castsi256_ps(_mm256_and_si256(v, _mm256_set1_epi32(int32_t(0xFFFF0000u)))));
  }
};

// The activations that take Bf16PairRow's GEMV, whose x comes in paired column order
// (widen_activation and the route in run() both ask this).
inline bool bf16_paired_gemv(const LinearWeight& w, int64_t rows) { return w.format == WeightFormat::bf16 && rows == 1; }

template <class Row>
constexpr bool paired_lanes() {
  if constexpr (requires { Row::kPairedLanes; }) return Row::kPairedLanes;
  return false;
}

// One FP8 weight row and its 128-row band's block scales (one per 128 columns): what every FP8
// panel decoder walks.
struct Fp8RowBase {
  static constexpr int kBlock = 128;
  static constexpr int64_t kBlockBytes = 128;
  const uint8_t* p = nullptr;
  const uint8_t* s = nullptr;
  Fp8RowBase() = default;
  Fp8RowBase(const LinearWeight& w, int64_t r)
      : p(static_cast<const uint8_t*>(w.data) + r * w.in), s(w.scale + (r / 128) * ((w.in + 127) / 128)) {}
  const void* at(int64_t k) const { return p + k; }
};

// e8m0 codes up to this one (scale 2^119) keep e4m3 × scale exact in fp32, the condition of
// the forms that move the scale between the factors of an exact fp64 product.
constexpr uint8_t kFp8ExactScaleMax = 246;

struct Fp8Row : Fp8RowBase {
  __m512 sc = _mm512_setzero_ps();
  Fp8Row() = default;
  Fp8Row(const LinearWeight& w, int64_t r) : Fp8RowBase(w, r) {}
  void begin(int64_t kb) { sc = _mm512_set1_ps(e8m0_to_f32(s[kb / 128])); }
  void get(int64_t k, int, __m512d& lo, __m512d& hi) {
    // e4m3 bits moved into f16 position are the value times 2^-8 (subnormals included)
    const __m256i b = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + k)));
    const __m256i h = _mm256_or_si256(_mm256_slli_epi16(_mm256_and_si256(b, _mm256_set1_epi16(0x80)), 8),
                                      _mm256_slli_epi16(_mm256_and_si256(b, _mm256_set1_epi16(0x7F)), 7));
    // times 2^8 first (exact), then the one rounding the reference makes: e4m3 × scale in fp32
    // (a scale of 2^120 or more overflows there, and here, as it does in dequant_row)
    const __m512 f = _mm512_mul_ps(_mm512_mul_ps(_mm512_cvtph_ps(h), _mm512_set1_ps(256.0f)), sc);
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
  static constexpr int64_t kBlockBytes = 16;  // a prefetch per block reaches each line 4 times
  const uint8_t* p = nullptr;
  const uint8_t* s = nullptr;
  __m512d lut_lo = _mm512_setzero_pd(), lut_hi = _mm512_setzero_pd();  // e2m1 codes 0-7, 8-15, scaled
  Fp4Row() = default;
  Fp4Row(const LinearWeight& w, int64_t r)
      : p(static_cast<const uint8_t*>(w.data) + r * (w.in / 2)), s(w.scale + r * (w.in / 32)) {}
  const void* at(int64_t k) const { return p + k / 2; }
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

// A GEMV's lane sums to the output: Rows with paired lanes hold canonical lanes 0, 2, ..., 14 in
// lo and 1, 3, ..., 15 in hi, put back in order first.
template <class Row>
inline float finish_row(__m512d lo, __m512d hi, bool rb) {
  if constexpr (paired_lanes<Row>()) {
    const __m512i first = _mm512_set_epi64(11, 3, 10, 2, 9, 1, 8, 0), second = _mm512_set_epi64(15, 7, 14, 6, 13, 5, 12, 4);
    return finish(_mm512_permutex2var_pd(lo, first, hi), _mm512_permutex2var_pd(lo, second, hi), rb);
  }
  return finish(lo, hi, rb);
}

// A GEMV reads each weight once, as NW (4) streams per thread; the hardware prefetcher alone
// left the bf16 head at ~31 GB/s of the machine's ~46. Software prefetches 1 KB ahead of each
// stream, one per cache line: the head 34.8 -> 27.6 ms (median of 6 alternating runs, flash-2l's
// 129280 x 4096 bf16 from its mapping). The one-row GEMVs (gemv_block, the FP8 VBMI form) now
// ask instead for the next NW rows, which follow these in memory, at the pace these are read:
// 1 KB ahead in a 1 KB row (FP8 wq_b) only reached the neighbouring row, already on its way.
// The few-row GEMVs and the f16 form keep the per-row distance (not measured against it).
// These prefetches go into L2 (T1): into L1 each holds one of the core's few L1 miss slots until
// its line arrives, and the bf16 one-row GEMV read 22-23 GB/s that way against 31 into L2
// (linear_bench BM_Bf16Head/1, alternated). The FP8 VBMI form keeps T0: into L2 it read less
// (wq_b 25-26 -> 22 GB/s).
constexpr int64_t kPrefetchBytes = 1024;
inline void prefetch_lines(const char* p, int64_t bytes) {
  for (int64_t off = 0; off < bytes; off += 64) _mm_prefetch(p + off, _MM_HINT_T1);
}
inline void prefetch_ahead(const void* p, int64_t bytes) { prefetch_lines(static_cast<const char*>(p) + kPrefetchBytes, bytes); }

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
  const auto step = [&](int64_t k, int j) {
    const __m512d xl = _mm512_loadu_pd(x + k), xh = _mm512_loadu_pd(x + k + 8);
#pragma GCC unroll 4
    for (int i = 0; i < NW; ++i) {
      __m512d wl, wh;
      row[i].get(k, j, wl, wh);
      lo[i] = _mm512_fmadd_pd(xl, wl, lo[i]);
      hi[i] = _mm512_fmadd_pd(xh, wh, hi[i]);
    }
  };
  // whole blocks with no exit inside (an exit per 16 columns made GCC keep the accumulators in
  // memory across it), then a partial last block (in % 16 == 0 always)
  const int64_t whole = w.in / Row::kBlock * Row::kBlock;
  // the next NW rows (contiguous with these), at the pace these are read
  const char* ahead = static_cast<const char*>(row[0].at(0)) + NW * (w.in / Row::kBlock) * Row::kBlockBytes;
  for (int64_t kb = 0; kb < whole; kb += Row::kBlock) {
    for (int i = 0; i < NW; ++i) row[i].begin(kb);
    prefetch_lines(ahead + NW * (kb / Row::kBlock) * Row::kBlockBytes, NW * Row::kBlockBytes);
#pragma GCC unroll 8
    for (int j = 0; j < Row::kBlock / 16; ++j) step(kb + 16 * j, j);
  }
  if (whole < w.in) {
    for (int i = 0; i < NW; ++i) row[i].begin(whole);
    for (int64_t k = whole; k < w.in; k += 16) step(k, int((k - whole) / 16));
  }
  for (int i = 0; i < NW; ++i) y[n + i] = finish_row<Row>(lo[i], hi[i], rb);
}

template <class Row>
void gemv(const LinearWeight& w, const double* x, float* y, bool rb, int64_t nb, int64_t ne) {
  int64_t n = nb;
  for (; n + 4 <= ne; n += 4) gemv_block<Row, 4>(w, x, y, rb, n);
  for (; n < ne; ++n) gemv_block<Row, 1>(w, x, y, rb, n);
}

// NR = 2 to 4 activation rows (x: stride w.in, y: stride w.out) and NW weight rows advance
// together, each weight vector decoded once for all NR rows. The accumulators are named arrays
// per activation row: GCC 12 keeps a two-dimensional array of them in memory.
template <class Row, int NW, int NR>
void gemv_multi_block(const LinearWeight& w, const double* x, float* y, bool rb, int64_t n) {
  static_assert(NR >= 2 && NR <= 4);
  Row row[NW];
  __m512d l0[NW], h0[NW], l1[NW], h1[NW], l2[NW], h2[NW], l3[NW], h3[NW];
  for (int i = 0; i < NW; ++i) {
    row[i] = Row(w, n + i);
    l0[i] = h0[i] = l1[i] = h1[i] = l2[i] = h2[i] = l3[i] = h3[i] = _mm512_setzero_pd();
  }
  const int64_t in = w.in;
  const auto step = [&](int64_t k, int j) {
    const double* xk = x + k;
    const __m512d x0l = _mm512_loadu_pd(xk), x0h = _mm512_loadu_pd(xk + 8);
    const __m512d x1l = _mm512_loadu_pd(xk + in), x1h = _mm512_loadu_pd(xk + in + 8);
    __m512d x2l = x0l, x2h = x0h, x3l = x0l, x3h = x0h;
    if constexpr (NR > 2) x2l = _mm512_loadu_pd(xk + 2 * in), x2h = _mm512_loadu_pd(xk + 2 * in + 8);
    if constexpr (NR > 3) x3l = _mm512_loadu_pd(xk + 3 * in), x3h = _mm512_loadu_pd(xk + 3 * in + 8);
#pragma GCC unroll 4
    for (int i = 0; i < NW; ++i) {
      __m512d wl, wh;
      row[i].get(k, j, wl, wh);
      l0[i] = _mm512_fmadd_pd(x0l, wl, l0[i]);
      h0[i] = _mm512_fmadd_pd(x0h, wh, h0[i]);
      l1[i] = _mm512_fmadd_pd(x1l, wl, l1[i]);
      h1[i] = _mm512_fmadd_pd(x1h, wh, h1[i]);
      if constexpr (NR > 2) {
        l2[i] = _mm512_fmadd_pd(x2l, wl, l2[i]);
        h2[i] = _mm512_fmadd_pd(x2h, wh, h2[i]);
      }
      if constexpr (NR > 3) {
        l3[i] = _mm512_fmadd_pd(x3l, wl, l3[i]);
        h3[i] = _mm512_fmadd_pd(x3h, wh, h3[i]);
      }
    }
  };
  const int64_t whole = in / Row::kBlock * Row::kBlock;  // as in gemv_block
  for (int64_t kb = 0; kb < whole; kb += Row::kBlock) {
    for (int i = 0; i < NW; ++i) {
      row[i].begin(kb);
      prefetch_ahead(row[i].at(kb), Row::kBlockBytes);
    }
#pragma GCC unroll 8
    for (int j = 0; j < Row::kBlock / 16; ++j) step(kb + 16 * j, j);
  }
  if (whole < in) {
    for (int i = 0; i < NW; ++i) row[i].begin(whole);
    for (int64_t k = whole; k < in; k += 16) step(k, int((k - whole) / 16));
  }
  for (int i = 0; i < NW; ++i) {
    y[n + i] = finish_row<Row>(l0[i], h0[i], rb);
    y[w.out + n + i] = finish_row<Row>(l1[i], h1[i], rb);
    if constexpr (NR > 2) y[2 * w.out + n + i] = finish_row<Row>(l2[i], h2[i], rb);
    if constexpr (NR > 3) y[3 * w.out + n + i] = finish_row<Row>(l3[i], h3[i], rb);
  }
}

template <class Row, int NR>
void gemv_multi(const LinearWeight& w, const double* x, float* y, bool rb, int64_t nb, int64_t ne) {
  constexpr int NW = NR == 2 ? 4 : 2;  // 2 · NR · NW accumulators, 2 · NR x vectors, 2 weight
  int64_t n = nb;
  for (; n + NW <= ne; n += NW) gemv_multi_block<Row, NW, NR>(w, x, y, rb, n);
  for (; n < ne; ++n) gemv_multi_block<Row, 1, NR>(w, x, y, rb, n);
}

// 1 to kGemvMaxRows activation rows, each weight read once for all of them: at a few rows this
// streams the weights at the memory's pace, where the panel's per-pass decoding and parked
// accumulators do not pay yet.
constexpr int64_t kGemvMaxRows = 4;
template <class Row>
void gemv_rows(const LinearWeight& w, const double* x, int64_t rows, float* y, bool rb, int64_t nb, int64_t ne) {
  switch (rows) {
    case 1: return gemv<Row>(w, x, y, rb, nb, ne);
    case 2: return gemv_multi<Row, 2>(w, x, y, rb, nb, ne);
    case 3: return gemv_multi<Row, 3>(w, x, y, rb, nb, ne);
    default: return gemv_multi<Row, 4>(w, x, y, rb, nb, ne);
  }
}

// FP8 with one activation row. A 128 × 128 block scale is shared by every row of its 128-row
// band, so it goes on x once per band (xs = x · 2^8 · scale, 1/128 of the products' work)
// instead of on each weight, and the weights need only e4m3 → f16 → fp32 → fp64, 32 columns
// at a time: the bytes interleaved with zeros make words b · 2^8 (no widening shuffle), an
// arithmetic shift and a mask move e4m3's fields to f16's (the value times 2^-8), and the
// interleave's lane order puts columns 0-7 | 16-23 and 8-15 | 24-31 in the two f16 vectors,
// whose halves are the canonical lanes of two 16-column steps. Each product is the same: the
// e4m3 value times scale is exact in fp32 for scale <= 2^119 (e8m0 codes <= 246), and a power
// of two moved from one factor to the other does not change an exact fp64 product. Bands
// with a larger (or NaN) scale take the per-weight decoder, which rounds as the reference does.
template <int NW>
void gemv_fp8_rows(const LinearWeight& w, const double* xs, float* y, bool rb, int64_t n) {
  const uint8_t* p[NW];
  __m512d lo[NW], hi[NW];
  for (int i = 0; i < NW; ++i) {
    p[i] = static_cast<const uint8_t*>(w.data) + (n + i) * w.in;
    lo[i] = _mm512_setzero_pd();
    hi[i] = _mm512_setzero_pd();
  }
  const __m256i zero = _mm256_setzero_si256(), keep = _mm256_set1_epi16(int16_t(0xBFFF));
  for (int64_t k = 0; k < w.in; k += 32) {
    const __m512d x0 = _mm512_loadu_pd(xs + k), x1 = _mm512_loadu_pd(xs + k + 8);
    const __m512d x2 = _mm512_loadu_pd(xs + k + 16), x3 = _mm512_loadu_pd(xs + k + 24);
#pragma GCC unroll 4
    for (int i = 0; i < NW; ++i) {
      if (k % 64 == 0) prefetch_ahead(p[i] + k, 64);
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p[i] + k));
      const __m256i a = _mm256_and_si256(_mm256_srai_epi16(_mm256_unpacklo_epi8(zero, v), 1), keep);
      const __m256i b = _mm256_and_si256(_mm256_srai_epi16(_mm256_unpackhi_epi8(zero, v), 1), keep);
      const __m512 fa = _mm512_cvtph_ps(a), fb = _mm512_cvtph_ps(b);  // columns 0-7|16-23, 8-15|24-31
      lo[i] = _mm512_fmadd_pd(x0, lo_pd(fa), lo[i]);
      hi[i] = _mm512_fmadd_pd(x1, lo_pd(fb), hi[i]);
      lo[i] = _mm512_fmadd_pd(x2, hi_pd(fa), lo[i]);
      hi[i] = _mm512_fmadd_pd(x3, hi_pd(fb), hi[i]);
    }
  }
  for (int i = 0; i < NW; ++i) y[n + i] = finish(lo[i], hi[i], rb);
}

// FP8, the faster form (1.7x gemv_fp8_rows from L2, one row): each e4m3 byte
// sign-extended to a 64-bit lane and shifted left 49 puts its exponent in the low 4 bits of
// fp64's and its mantissa at the top of fp64's; with the sign's copies above cleared (bit 63
// kept) that fp64 is exactly the e4m3 value × 2^-1016 (an e4m3 subnormal becomes an fp64
// subnormal, zero stays zero), in column order. The 2^1016 goes on x with the block scale:
// xs = (x · scale) · 2^1016, finite and exact while |x · scale| < 2^8, which gemv_fp8 checks
// per band (else the f16 form above for one row, the per-weight decoder for several). No
// shuffle, no conversion: 3 integer operations per 8 weights, as a Row of the GEMVs below.
// keep: _mm512_set1_epi64(kE4m3BitsKeep) (a parameter, so that a loop can keep it in a register).
constexpr int64_t kE4m3BitsKeep = int64_t(0x80FFFFFFFFFFFFFFull);  // the sign (bit 63) and bits 0-55
inline __m512d e4m3_times_2m1016(const uint8_t* q, __m512i keep) {
  const __m512i v = _mm512_cvtepi8_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q)));
  return _mm512_castsi512_pd(_mm512_and_si512(_mm512_slli_epi64(v, 49), keep));
}

struct Fp8BitsRow {  // the weight side of the bits form (x carries scale · 2^1016)
  static constexpr int kBlock = 64;
  static constexpr int64_t kBlockBytes = 64;
  const uint8_t* p = nullptr;
  Fp8BitsRow() = default;
  Fp8BitsRow(const LinearWeight& w, int64_t r) : p(static_cast<const uint8_t*>(w.data) + r * w.in) {}
  const void* at(int64_t k) const { return p + k; }
  void begin(int64_t) {}
  void get(int64_t k, int, __m512d& lo, __m512d& hi) {
    const __m512i keep = _mm512_set1_epi64(kE4m3BitsKeep);
    lo = e4m3_times_2m1016(p + k, keep);
    hi = e4m3_times_2m1016(p + k + 8, keep);
  }
  __m512d half(int64_t k) const { return e4m3_times_2m1016(p + k, _mm512_set1_epi64(kE4m3BitsKeep)); }
};

// FP8 for the panel: the bits form above with the block scale put back on the weight by
// vscalefpd (w · 2^(1016 + scale exponent), exact: e4m3 × scale, scale <= 2^119, is exact in fp32
// and so is this fp64 — zero and subnormals included), 4 operations per 8 weights against
// Fp8Row's f16 route with its three conversions. Only for rows whose band scales are all at most
// 2^119 (fp8_bits_panel_ok); the rest keep Fp8Row, which rounds as the reference does.
struct Fp8ScaledBitsRow : Fp8RowBase {
  __m512d e = _mm512_setzero_pd();
  Fp8ScaledBitsRow() = default;
  Fp8ScaledBitsRow(const LinearWeight& w, int64_t r) : Fp8RowBase(w, r) {}
  void begin(int64_t kb) { e = _mm512_set1_pd(double(int(s[kb / 128]) - 127 + 1016)); }
  void get(int64_t k, int, __m512d& lo, __m512d& hi) {
    const __m512i keep = _mm512_set1_epi64(kE4m3BitsKeep);
    lo = _mm512_scalef_pd(e4m3_times_2m1016(p + k, keep), e);
    hi = _mm512_scalef_pd(e4m3_times_2m1016(p + k + 8, keep), e);
  }
};

// A band's block scales s[0, blocks) are all at most kFp8ExactScaleMax.
bool fp8_band_exact(const uint8_t* s, int64_t blocks) {
  return std::all_of(s, s + blocks, [](uint8_t c) { return c <= kFp8ExactScaleMax; });
}

// Every weight row in [nb, ne) has exact band scales.
bool fp8_bits_panel_ok(const LinearWeight& w, int64_t nb, int64_t ne) {
  const int64_t blocks = (w.in + 127) / 128;
  for (int64_t band = nb / 128; band * 128 < ne; ++band)
    if (!fp8_band_exact(w.scale + band * blocks, blocks)) return false;
  return true;
}

// FP8, the bits form for 1-3 activation rows on CPUs with VBMI: the same fp64 values with one
// shuffle per 8 weights and no shift. The 8 bytes of columns k..k+7 are broadcast to every
// 64-bit lane (a load, not a shuffle); vpmultishiftqb then takes, in lane i, the 8 bits at bit
// 8i - 1 into byte 6 and the 8 bits at bit 8i (column k + i's byte) into byte 7 (the other
// bytes zeroed by its mask), which puts that byte's mantissa and exponent at bits 49-55 and its
// sign at bit 63; the mask keeps those (the bits around them are neighbours' and copies). The
// shift of the form above was one of the two operations per 8 weights on the two ports that
// shifts and shuffles share on Zen 5, which bound this GEMV (not its memory) at one row; but
// vpmultishiftqb itself issues on the FMA pipes, so with every row in this form the FMAs and
// multishifts bound it there instead. The GEMV below takes one row of four by the shift form,
// which splits the decoding between both pairs of pipes (one thread: +8% from L2 and memory).
__attribute__((target("avx512vbmi"))) inline __m512d e4m3_times_2m1016_vbmi(const uint8_t* q, __m512i ctrl, __m512i keep) {
  int64_t b;
  __builtin_memcpy(&b, q, 8);
  const __m512i v = _mm512_maskz_multishift_epi64_epi8(__mmask64(0xC0C0C0C0C0C0C0C0ull), ctrl, _mm512_set1_epi64(b));
  return _mm512_castsi512_pd(_mm512_and_si512(v, keep));
}

// NW weight rows × NR (1-3) activation rows (xs: stride w.in, y: stride w.out); named
// accumulator arrays per activation row, as in gemv_multi_block (GCC 12).
template <int NW, int NR>
__attribute__((target("avx512vbmi"))) void gemv_fp8_vbmi_block(const LinearWeight& w, const double* xs, float* y, bool rb,
                                                                int64_t n) {
  static_assert(NR >= 1 && NR <= 3);
  // lane i: byte 6 from bit 8i - 1 (mod 64), byte 7 from bit 8i
  const __m512i ctrl = _mm512_set_epi64(0x3837000000000000, 0x302F000000000000, 0x2827000000000000, 0x201F000000000000,
                                        0x1817000000000000, 0x100F000000000000, 0x0807000000000000, 0x003F000000000000);
  const __m512i keep = _mm512_set1_epi64(int64_t(0x80FE000000000000ull));
  const __m512i keep_shifted = _mm512_set1_epi64(kE4m3BitsKeep);
  const int64_t in = w.in;
  const uint8_t* p[NW];
  __m512d l0[NW], h0[NW], l1[NW], h1[NW], l2[NW], h2[NW];
  for (int i = 0; i < NW; ++i) {
    p[i] = static_cast<const uint8_t*>(w.data) + (n + i) * in;
    l0[i] = h0[i] = l1[i] = h1[i] = l2[i] = h2[i] = _mm512_setzero_pd();
  }
  // The NW rows are one contiguous region, read 16·NW bytes a step: the next group's region is
  // asked for at the same pace, a line per 64 bytes read.
  const char* ahead = reinterpret_cast<const char*>(p[0]) + NW * in;
  for (int64_t k = 0; k < in; k += 16) {
    __m512d x0l = _mm512_loadu_pd(xs + k), x0h = _mm512_loadu_pd(xs + k + 8);
    __m512d x1l = x0l, x1h = x0h, x2l = x0l, x2h = x0h;
    asm("" : "+v"(x0l), "+v"(x0h));  // one load each, not one per FMA
    if constexpr (NR > 1) {
      x1l = _mm512_loadu_pd(xs + in + k), x1h = _mm512_loadu_pd(xs + in + k + 8);
      asm("" : "+v"(x1l), "+v"(x1h));
    }
    if constexpr (NR > 2) {
      x2l = _mm512_loadu_pd(xs + 2 * in + k), x2h = _mm512_loadu_pd(xs + 2 * in + k + 8);
      asm("" : "+v"(x2l), "+v"(x2h));
    }
    if ((k * NW) % 64 == 0) _mm_prefetch(ahead + k * NW, _MM_HINT_T0);  // into L1 (prefetch_lines)
#pragma GCC unroll 4
    for (int i = 0; i < NW; ++i) {
      // the last of 4 rows by sign extension (the same values): vpmultishiftqb issues on the
      // FMA pipes, the sign extension and shift on others, and 3 rows to 1 balances them
      const bool by_shift = NW == 4 && i == 3;
      const __m512d wl = by_shift ? e4m3_times_2m1016(p[i] + k, keep_shifted) : e4m3_times_2m1016_vbmi(p[i] + k, ctrl, keep);
      const __m512d wh =
          by_shift ? e4m3_times_2m1016(p[i] + k + 8, keep_shifted) : e4m3_times_2m1016_vbmi(p[i] + k + 8, ctrl, keep);
      l0[i] = _mm512_fmadd_pd(x0l, wl, l0[i]);
      h0[i] = _mm512_fmadd_pd(x0h, wh, h0[i]);
      if constexpr (NR > 1) {
        l1[i] = _mm512_fmadd_pd(x1l, wl, l1[i]);
        h1[i] = _mm512_fmadd_pd(x1h, wh, h1[i]);
      }
      if constexpr (NR > 2) {
        l2[i] = _mm512_fmadd_pd(x2l, wl, l2[i]);
        h2[i] = _mm512_fmadd_pd(x2h, wh, h2[i]);
      }
    }
  }
  for (int i = 0; i < NW; ++i) {
    y[n + i] = finish(l0[i], h0[i], rb);
    if constexpr (NR > 1) y[w.out + n + i] = finish(l1[i], h1[i], rb);
    if constexpr (NR > 2) y[2 * w.out + n + i] = finish(l2[i], h2[i], rb);
  }
}

template <int NR>
void gemv_fp8_vbmi_rows(const LinearWeight& w, const double* xs, float* y, bool rb, int64_t nb, int64_t ne) {
  constexpr int NW = NR == 3 ? 2 : 4;
  int64_t n = nb;
  for (; n + NW <= ne; n += NW) gemv_fp8_vbmi_block<NW, NR>(w, xs, y, rb, n);
  for (; n < ne; ++n) gemv_fp8_vbmi_block<1, NR>(w, xs, y, rb, n);
}

// 1 to 3 activation rows (decode; MTP verification and small batches)
void gemv_fp8_vbmi(const LinearWeight& w, const double* xs, int64_t rows, float* y, bool rb, int64_t nb, int64_t ne) {
  switch (rows) {
    case 1: return gemv_fp8_vbmi_rows<1>(w, xs, y, rb, nb, ne);
    case 2: return gemv_fp8_vbmi_rows<2>(w, xs, y, rb, nb, ne);
    default: return gemv_fp8_vbmi_rows<3>(w, xs, y, rb, nb, ne);
  }
}

// Any number of activation rows, kGemvMaxRows at a time, each group a few-row GEMV.
template <class Row>
void gemv_row_groups(const LinearWeight& w, const double* x, int64_t rows, float* y, bool rb, int64_t nb, int64_t ne) {
  for (int64_t r0 = 0; r0 < rows; r0 += kGemvMaxRows)
    gemv_rows<Row>(w, x + r0 * w.in, std::min(kGemvMaxRows, rows - r0), y + r0 * w.out, rb, nb, ne);
}

// 4 to kGemvRowsLimit activation rows for the decoders with half(k) (the FP8 bits form),
// in blocks that keep every operand close: kDirectBlock columns of 4 activation rows (16 KB, in
// L1) against a band of kDirectBand weight rows, 4 weight rows × 4 activation rows at a time,
// over lanes 0-7 of every output (columns k..k+7 of each 16-column step) and then lanes 8-15 —
// each lane's columns in order either way, so the same bits as the GEMVs above — with the lane
// sums parked in `acc` between column blocks. Each activation
// vector is loaded once for 4 weight rows and each decoded weight vector used by 4 activation
// rows: from L1 this runs at the FMA peak (2 per cycle), where the 4-row GEMV, its activation
// rows beyond L1 and its loads folded into the FMAs (one per FMA, from L2), and the panel, its
// decoding a phase apart from its FMAs, ran at half of it. (bf16 keeps the 4-row GEMV and the
// panel: its decoder's conversion to fp64 made this kernel slower than the panel there.)
constexpr int64_t kDirectBlock = 512;

template <class Row, int NR>
void blocked_kernel(const Row* row, const double* x, int64_t in, int64_t k0, int64_t len, double* acc, bool first) {
  static_assert(NR >= 1 && NR <= 4);
  const double* x1 = x + (NR > 1 ? in : 0);
  const double* x2 = x + (NR > 2 ? 2 * in : 0);
  const double* x3 = x + (NR > 3 ? 3 * in : 0);
  for (int h = 0; h < 2; ++h) {
    // acc: [activation row r][weight row i][16 lanes]; named per activation row (GCC 12 keeps a
    // two-dimensional array of accumulators in memory)
    __m512d a0[4], a1[4], a2[4], a3[4];
    for (int i = 0; i < 4; ++i) {
      const double* ai = acc + i * 16 + 8 * h;
      a0[i] = first ? _mm512_setzero_pd() : _mm512_load_pd(ai);
      a1[i] = first || NR < 2 ? _mm512_setzero_pd() : _mm512_load_pd(ai + 64);
      a2[i] = first || NR < 3 ? _mm512_setzero_pd() : _mm512_load_pd(ai + 128);
      a3[i] = first || NR < 4 ? _mm512_setzero_pd() : _mm512_load_pd(ai + 192);
    }
    for (int64_t k = k0 + 8 * h; k < k0 + len; k += 16) {
      __m512d v0 = _mm512_loadu_pd(x + k), v1 = v0, v2 = v0, v3 = v0;
      asm("" : "+v"(v0));  // one load per activation vector, not one per FMA
      if constexpr (NR > 1) { v1 = _mm512_loadu_pd(x1 + k); asm("" : "+v"(v1)); }
      if constexpr (NR > 2) { v2 = _mm512_loadu_pd(x2 + k); asm("" : "+v"(v2)); }
      if constexpr (NR > 3) { v3 = _mm512_loadu_pd(x3 + k); asm("" : "+v"(v3)); }
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) {
        const __m512d wv = row[i].half(k);
        a0[i] = _mm512_fmadd_pd(v0, wv, a0[i]);
        if constexpr (NR > 1) a1[i] = _mm512_fmadd_pd(v1, wv, a1[i]);
        if constexpr (NR > 2) a2[i] = _mm512_fmadd_pd(v2, wv, a2[i]);
        if constexpr (NR > 3) a3[i] = _mm512_fmadd_pd(v3, wv, a3[i]);
      }
    }
    for (int i = 0; i < 4; ++i) {
      double* ai = acc + i * 16 + 8 * h;
      _mm512_store_pd(ai, a0[i]);
      if constexpr (NR > 1) _mm512_store_pd(ai + 64, a1[i]);
      if constexpr (NR > 2) _mm512_store_pd(ai + 128, a2[i]);
      if constexpr (NR > 3) _mm512_store_pd(ai + 192, a3[i]);
    }
  }
}

// Weight rows [nb, ne) (a multiple of 4 of them; gemv_rows takes the rest) against `rows`
// activation rows; acc: kDirectBand × 16 × (rows rounded up to 4) doubles, 64-byte aligned.
template <class Row>
void gemv_blocked(const LinearWeight& w, const double* x, int64_t rows, float* y, bool rb, int64_t nb, int64_t ne,
                  double* acc) {
  const int64_t in = w.in, groups = (rows + 3) / 4;
  const int64_t whole = nb + (ne - nb) / 4 * 4;
  for (int64_t b0 = nb; b0 < whole; b0 += kDirectBand) {
    const int64_t b1 = std::min(whole, b0 + kDirectBand);
    for (int64_t k0 = 0; k0 < in; k0 += kDirectBlock) {
      const int64_t len = std::min(kDirectBlock, in - k0);
      for (int64_t r0 = 0; r0 < rows; r0 += 4) {
        const double* xr = x + r0 * in;
        for (int64_t n = b0; n < b1; n += 4) {
          Row row[4];
          for (int i = 0; i < 4; ++i) row[i] = Row(w, n + i);
          if (r0 == 0)  // the next column block of these rows, while this one computes
            for (int i = 0; i < 4; ++i)
              for (int64_t off = 0; off < len * Row::kBlockBytes / Row::kBlock; off += 64)
                _mm_prefetch(static_cast<const char*>(row[i].at(k0 + kDirectBlock)) + off, _MM_HINT_T0);
          // lane sums of weight rows n..n+3 × activation rows r0..r0+3: [4 act][4 weight][16]
          double* a = acc + ((n - b0) / 4 * groups + r0 / 4) * 256;
          switch (std::min<int64_t>(4, rows - r0)) {
            case 1: blocked_kernel<Row, 1>(row, xr, in, k0, len, a, k0 == 0); break;
            case 2: blocked_kernel<Row, 2>(row, xr, in, k0, len, a, k0 == 0); break;
            case 3: blocked_kernel<Row, 3>(row, xr, in, k0, len, a, k0 == 0); break;
            default: blocked_kernel<Row, 4>(row, xr, in, k0, len, a, k0 == 0); break;
          }
        }
      }
    }
    for (int64_t n = b0; n < b1; n += 4)
      for (int64_t r0 = 0; r0 < rows; r0 += 4) {
        const double* a = acc + ((n - b0) / 4 * groups + r0 / 4) * 256;
        for (int64_t r = r0; r < std::min(rows, r0 + 4); ++r)
          for (int i = 0; i < 4; ++i) {
            const double* l = a + ((r - r0) * 4 + i) * 16;
            y[r * w.out + n + i] = finish(_mm512_load_pd(l), _mm512_load_pd(l + 8), rb);
          }
      }
  }
  if (whole < ne) gemv_row_groups<Row>(w, x, rows, y, rb, whole, ne);
}

// Where the blocked GEMV beats the VBMI one: from 4 rows, and at 3 rows once their activations
// (in fp64) outgrow L1, from where the VBMI GEMV reads them for every 4 weight rows (one thread,
// 3 rows × 4096 columns: 26.5 -> 30.5 GMAC/s; × 1024: 31.8 against 20.8 blocked; at 2 rows the
// VBMI GEMV wins either way, 32.5 against 22 at 4096).
inline bool blocked_fp8(int64_t rows, int64_t in) { return rows >= 4 || (rows == 3 && 3 * in * 8 > 48 * 1024); }

// FP8 GEMV of 1 to kGemvRowsLimit activation rows, band by band: the bits form where the band's
// scales and the activations allow it (the blocked GEMV where blocked_fp8 says), else the f16 form (one
// row) or the per-weight decoder (xs: rows × in doubles of scratch, then the blocked GEMV's lane
// sums).
void gemv_fp8(const LinearWeight& w, const double* x, int64_t rows, float* y, bool rb, int64_t nb, int64_t ne,
              double* xs) {
  const int64_t blocks = w.in / 128;
  // max |x| per 128-column block over the rows, for the bits form's range (NaN fails it)
  constexpr int64_t kMaxBlocks = 512;
  double x_max[kMaxBlocks];
  const bool bits_form = blocks <= kMaxBlocks;
  if (bits_form) {
    const __m512d abs_mask = _mm512_castsi512_pd(_mm512_set1_epi64(INT64_MAX));
    for (int64_t c = 0; c < blocks; ++c) {
      __m512d m = _mm512_setzero_pd();
      __mmask8 nan = 0;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t k = c * 128; k < c * 128 + 128; k += 8) {
          const __m512d v = _mm512_loadu_pd(x + r * w.in + k);
          nan |= _mm512_cmp_pd_mask(v, v, _CMP_UNORD_Q);
          m = _mm512_max_pd(m, _mm512_and_pd(v, abs_mask));
        }
      x_max[c] = nan ? std::numeric_limits<double>::quiet_NaN() : _mm512_reduce_max_pd(m);
    }
  }
  for (int64_t b0 = nb; b0 < ne;) {
    const int64_t band = b0 / 128, b1 = std::min(ne, (band + 1) * 128);
    const uint8_t* s = w.scale + band * blocks;
    const bool tame = fp8_band_exact(s, blocks);
    bool in_range = bits_form;
    for (int64_t c = 0; c < blocks; ++c) in_range = in_range && x_max[c] * double(e8m0_to_f32(s[c])) < 256.0;
    if (tame && (in_range || rows == 1)) {
      // bits form: xs = (x · scale) · 2^1016; f16 form: xs = x · (2^8 · scale)
      const __m512d big = _mm512_set1_pd(in_range ? 0x1p1016 : 256.0);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < blocks; ++c) {
          const __m512d sc = _mm512_set1_pd(double(e8m0_to_f32(s[c])));
          for (int64_t k = r * w.in + c * 128; k < r * w.in + c * 128 + 128; k += 8)
            _mm512_store_pd(xs + k, _mm512_mul_pd(_mm512_mul_pd(_mm512_loadu_pd(x + k), sc), big));
        }
      if (in_range) {
        if (blocked_fp8(rows, w.in)) gemv_blocked<Fp8BitsRow>(w, xs, rows, y, rb, b0, b1, xs + rows * w.in);
        else if (has_vbmi()) gemv_fp8_vbmi(w, xs, rows, y, rb, b0, b1);
        else gemv_rows<Fp8BitsRow>(w, xs, rows, y, rb, b0, b1);
      } else {
        int64_t n = b0;
        for (; n + 4 <= b1; n += 4) gemv_fp8_rows<4>(w, xs, y, rb, n);
        for (; n < b1; ++n) gemv_fp8_rows<1>(w, xs, y, rb, n);
      }
    } else {  // scales past 2^119 (or several rows out of the bits form's range): per weight
      gemv_row_groups<Fp8Row>(w, x, rows, y, rb, b0, b1);
    }
    b0 = b1;
  }
}

// FP4, any number of activation rows: the exact integer route (fp4_int.h) per (weight row,
// activation row) that meets its condition, the fp64 decoder per output for the rest, and for
// a whole activation row not FP8-quantized. kIntRouteRows activation rows at a time (the
// scratch for their byte slices): 3x the fp64 panel on a flash-2l expert at 2 to 64 rows (its
// weight decoding and fp64 FMAs against byte products). Within a group, kFp4IntRows rows share
// each weight chunk's decoding (fp4_int_rows: 16 rows of an expert 40 -> 44-45 GMAC/s on one
// thread; 4 measured faster than 2 or 3 per call, and again with the sets' order below: 2, 3
// and 4 rows 64, 66, 66 GMAC/s).
void gemm_fp4_int(const LinearWeight& w, const double* x, int64_t rows, float* y, bool rb, int64_t nb, int64_t ne,
                  double* scratch) {
  Fp4IntActivation a[kIntRouteRows];
  bool ok[kIntRouteRows];
  for (int64_t r0 = 0; r0 < rows; r0 += kIntRouteRows) {
    const int64_t g = std::min(kIntRouteRows, rows - r0);
    const double* xg = x + r0 * w.in;
    float* yg = y + r0 * w.out;
    for (int64_t r = 0; r < g; ++r) {
      ok[r] = fp4_int_prepare(xg + r * w.in, w.in, scratch + r * (w.in / 2), a[r]);
      if (!ok[r]) gemv<Fp4Row>(w, xg + r * w.in, yg + r * w.out, rb, nb, ne);
    }
    // the rows that take the route, kFp4IntRows at a time per weight row
    const Fp4IntActivation* act[kIntRouteRows];
    float* out[kIntRouteRows];
    int count = 0;
    for (int64_t r = 0; r < g; ++r)
      if (ok[r]) act[count] = &a[r], out[count] = yg + r * w.out, ++count;
    // Each set of kFp4IntRows rows passes over all the weight rows before the next: its byte
    // slices (4 rows: ~32 KB) stay in L1 while the weights stream by. Weight row by weight row
    // with every set's rows in turn (16 rows: 196 KB of slices), the slices came from L2 for
    // every weight row and bounded the route (one thread, 16 rows of a flash-2l expert: 47 ->
    // 66 GMAC/s; the weights, read once per set, are ~5 GB/s of it).
    for (int i = 0; i < count; i += kFp4IntRows) {
      const int c = std::min(kFp4IntRows, count - i);
      for (int64_t n = nb; n < ne; ++n) {
        const unsigned taken = fp4_int_rows(w, act + i, c, n, out + i, rb);
        for (int k = 0; k < c; ++k)
          if (!(taken >> k & 1)) {
            const int64_t r = act[i + k] - a;  // its activation row in the group
            gemv_block<Fp4Row, 1>(w, xg + r * w.in, out[i + k], rb, n);
          }
      }
    }
  }
}

// Several activation rows: the weights are decoded once per kPanelRows rows × kPanelBlock
// columns (linear.h) into an fp64 panel (12 KB, L1-resident) that every activation row then
// passes over; accumulators live in registers within a block and in `acc` between blocks (a
// store and reload is exact).

// NR activation rows × NW panel rows over `len` columns (x: row stride `in`, already offset to
// the block). Lanes 0-7 of every output advance over the block, then lanes 8-15 (each lane's
// columns in order either way: the same bits), so a pass holds NR × NW accumulators, not twice
// that: 3 × 6 = 18 + 6 weight + 3 activation vectors fit the 32 registers. Each x vector, read
// from L2, serves 6 FMAs (4 with both halves live: the activation stream from L2 was the bound).
// x is read as fp32 (the activation's own values) and widened per load: the widening is free
// beside the FMAs, and half the bytes from L2 let twice the rows share a pass (one thread from
// L2, 30 rows × 4096: 4.95 -> 5.66 G FMA/s; 60 rows, which fp64 did not fit: 5.14 -> 5.97).
// first: the first column block, whose accumulators start at zero (not loaded: the buffer
// of rows × kPanelRows × 16 doubles is not cleared for it, which was a memset of 256 KB per group
// at 512 rows).
template <int NW, int NR>
void panel_kernel(const double* panel, int64_t len, const float* x, int64_t in, double* acc, bool first) {
  for (int half = 0; half < 2; ++half) {
    __m512d a[NR][NW];
    for (int r = 0; r < NR; ++r)
      for (int i = 0; i < NW; ++i)
        a[r][i] = first ? _mm512_setzero_pd() : _mm512_load_pd(acc + (r * NW + i) * 16 + 8 * half);
    for (int64_t k = 8 * half; k < len; k += 16) {
      __m512d wv[NW], xv[NR];
      // The empty asm pins each operand in a register: otherwise the compiler folds the panel
      // load into every FMA that uses it (NR loads of the same vector), and loads become the limit.
      for (int i = 0; i < NW; ++i) {
        wv[i] = _mm512_load_pd(panel + i * kPanelBlock + k);
        asm("" : "+v"(wv[i]));
      }
      for (int r = 0; r < NR; ++r) {
        xv[r] = _mm512_cvtps_pd(_mm256_loadu_ps(x + r * in + k));
        asm("" : "+v"(xv[r]));
      }
      for (int r = 0; r < NR; ++r)
        for (int i = 0; i < NW; ++i) a[r][i] = _mm512_fmadd_pd(xv[r], wv[i], a[r][i]);
    }
    for (int r = 0; r < NR; ++r)
      for (int i = 0; i < NW; ++i) _mm512_store_pd(acc + (r * NW + i) * 16 + 8 * half, a[r][i]);
  }
}

template <int NW>
void panel_block(const double* panel, int64_t len, const float* x, int64_t in, int64_t rows, double* acc, bool first) {
  int64_t r = 0;
  for (; r + 3 <= rows; r += 3) panel_kernel<NW, 3>(panel, len, x + r * in, in, acc + r * NW * 16, first);
  if (rows - r == 2) panel_kernel<NW, 2>(panel, len, x + r * in, in, acc + r * NW * 16, first);
  if (rows - r == 1) panel_kernel<NW, 1>(panel, len, x + r * in, in, acc + r * NW * 16, first);
}

template <class Row>
void gemm(const LinearWeight& w, const float* x, int64_t rows, float* y, bool rb, int64_t nb, int64_t ne,
          double* scratch) {
  const int64_t in = w.in;
  double* panel = scratch;
  double* acc = scratch + kPanelRows * kPanelBlock;
  for (int64_t n = nb; n < ne; n += kPanelRows) {
    const int nw = int(std::min<int64_t>(kPanelRows, ne - n));
    Row row[kPanelRows];
    for (int i = 0; i < nw; ++i) row[i] = Row(w, n + i);
    for (int64_t k0 = 0; k0 < in; k0 += kPanelBlock) {
      const int64_t len = std::min(kPanelBlock, in - k0);
      for (int i = 0; i < nw; ++i) {
        double* dst = panel + i * kPanelBlock;
        for (int64_t kb = 0; kb < len; kb += Row::kBlock) {
          row[i].begin(k0 + kb);
          for (int j = 0; j < Row::kBlock / 16 && kb + 16 * j < len; ++j) {
            __m512d wl, wh;
            row[i].get(k0 + kb + 16 * j, j, wl, wh);
            _mm512_store_pd(dst + kb + 16 * j, wl);
            _mm512_store_pd(dst + kb + 16 * j + 8, wh);
          }
        }
      }
      // The FMAs over this panel leave the memory idle unless the next block is on its way:
      // ask for it now (each row's next kPanelBlock columns; the last block's run past the row,
      // into the next rows', which come next).
      for (int i = 0; i < nw; ++i)
        for (int64_t kb = 0; kb < kPanelBlock; kb += Row::kBlock) {
          const char* next = static_cast<const char*>(row[i].at(k0 + kPanelBlock + kb));
          for (int64_t off = 0; off < Row::kBlockBytes; off += 64) _mm_prefetch(next + off, _MM_HINT_T0);
        }
      const bool first = k0 == 0;
      switch (nw) {
        case 6: panel_block<6>(panel, len, x + k0, in, rows, acc, first); break;
        case 5: panel_block<5>(panel, len, x + k0, in, rows, acc, first); break;
        case 4: panel_block<4>(panel, len, x + k0, in, rows, acc, first); break;
        case 3: panel_block<3>(panel, len, x + k0, in, rows, acc, first); break;
        case 2: panel_block<2>(panel, len, x + k0, in, rows, acc, first); break;
        default: panel_block<1>(panel, len, x + k0, in, rows, acc, first); break;
      }
    }
    // outputs o = r·nw + i, 8 at a time
    const int64_t outputs = rows * nw;
    int64_t o = 0;
    float f[8];
    for (; o + 8 <= outputs; o += 8) {
      fold8(acc + o * 16, f);
      for (int j = 0; j < 8; ++j) y[((o + j) / nw) * w.out + n + (o + j) % nw] = rb ? round_bf16(f[j]) : f[j];
    }
    for (; o < outputs; ++o) {
      const double* a = acc + o * 16;
      y[(o / nw) * w.out + n + o % nw] = finish(_mm512_load_pd(a), _mm512_load_pd(a + 8), rb);
    }
  }
}

// Activation rows per pass over the weights. Every panel of weight rows passes over all the
// rows' x, so with x beyond L2 it streamed from memory once per panel (128 rows of an expert's
// 4096 columns in fp64: 4 MB; 10 GMAC/s against 19 at 16 rows). Passes over at most ~1 MB of
// x (fp32) keep it in L2; the weights are decoded again per pass, which at >= 30 rows is a
// small share.
constexpr int64_t kRowBlockBytes = int64_t(1) << 20;
inline int64_t row_block(int64_t in, int64_t rows) {
  const int64_t fit = std::max<int64_t>(3, kRowBlockBytes / (in * int64_t(sizeof(float))) / 3 * 3);
  if (rows <= fit) return rows;
  // as many passes as the fit needs, of even size: 64 rows that fit 30 at a time go as 22 + 22
  // + 20, not 30 + 30 + 4 (a 4-row pass decodes every weight again for 4 rows)
  const int64_t passes = (rows + fit - 1) / fit;
  return (rows + passes - 1) / passes;
}

template <class Row>
void run(const LinearWeight& w, const double* x, const float* xf, int64_t rows, float* y, bool rb, int64_t nb, int64_t ne,
         double* panel) {
  switch (linear_route(w, rows)) {
    case LinearRoute::fp4_int: return gemm_fp4_int(w, x, rows, y, rb, nb, ne, panel);
    case LinearRoute::fp8_gemv: return gemv_fp8(w, x, rows, y, rb, nb, ne, panel);
    case LinearRoute::gemv:  // bf16, one row: x in Bf16PairRow's column order (widen_activation)
      if constexpr (std::is_same_v<Row, Bf16Row>)
        if (bf16_paired_gemv(w, rows)) return gemv<Bf16PairRow>(w, x, y, rb, nb, ne);
      return gemv_rows<Row>(w, x, rows, y, rb, nb, ne);
    case LinearRoute::panel: break;
  }
  const int64_t step = row_block(w.in, rows);
  const bool fp8_bits = std::is_same_v<Row, Fp8Row> && fp8_bits_panel_ok(w, nb, ne);
  for (int64_t r0 = 0; r0 < rows; r0 += step) {  // each output's dot is the same whatever the split
    const int64_t n = std::min(step, rows - r0);
    if (fp8_bits) gemm<Fp8ScaledBitsRow>(w, xf + r0 * w.in, n, y + r0 * w.out, rb, nb, ne, panel);
    else gemm<Row>(w, xf + r0 * w.in, n, y + r0 * w.out, rb, nb, ne, panel);
  }
}

}  // namespace

LinearRoute linear_route(const LinearWeight& w, int64_t rows) {
  if (w.format == WeightFormat::fp4) {
    if (fp4_int_supported(w)) return LinearRoute::fp4_int;
    // (FP4 outside the integer route keeps the fp64 panel from 2 rows: the few-row GEMV was not
    // measured against it there)
    return rows == 1 ? LinearRoute::gemv : LinearRoute::panel;
  }
  if (w.format == WeightFormat::fp8 && rows <= kGemvRowsLimit && w.in % 128 == 0) return LinearRoute::fp8_gemv;
  return rows <= kGemvMaxRows ? LinearRoute::gemv : LinearRoute::panel;
}

void widen_activation(const LinearWeight& w, const float* x, int64_t rows, double* x64) {
  const int64_t n = rows * w.in;  // a multiple of 16 (linear_supported)
  if (bf16_paired_gemv(w, rows)) {
    // each 16 columns' even ones, then the odd ones (Bf16PairRow)
    const __m512i even = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 15, 13, 11, 9, 7, 5, 3, 1);
    for (int64_t k = 0; k < n; k += 16) {
      const __m512 v = _mm512_loadu_ps(x + k);
      _mm512_storeu_pd(x64 + k, _mm512_cvtps_pd(_mm512_castps512_ps256(_mm512_permutexvar_ps(even, v))));
      _mm512_storeu_pd(x64 + k + 8, _mm512_cvtps_pd(_mm512_castps512_ps256(_mm512_permutexvar_ps(odd, v))));
    }
    return;
  }
  for (int64_t k = 0; k < n; k += 8) _mm512_storeu_pd(x64 + k, _mm512_cvtps_pd(_mm256_loadu_ps(x + k)));
}

bool linear_supported(const LinearWeight& w) {
  return w.in % (w.format == WeightFormat::fp4 ? 32 : 16) == 0;
}

void linear_range(const LinearWeight& w, const double* x, const float* xf, int64_t rows, float* y, bool rb, int64_t nb,
                  int64_t ne, double* panel) {
  switch (w.format) {
    case WeightFormat::f32: run<F32Row>(w, x, xf, rows, y, rb, nb, ne, panel); break;
    case WeightFormat::bf16: run<Bf16Row>(w, x, xf, rows, y, rb, nb, ne, panel); break;
    case WeightFormat::fp8: run<Fp8Row>(w, x, xf, rows, y, rb, nb, ne, panel); break;
    case WeightFormat::fp4: run<Fp4Row>(w, x, xf, rows, y, rb, nb, ne, panel); break;
  }
}

}  // namespace strata::kernels::avx512
