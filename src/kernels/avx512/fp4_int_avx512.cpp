// The exact integer route for FP4 GEMVs (fp4_int.h says why it is exact).
//
// Layout. A weight row is read 64 bytes (128 columns: byte i holds columns 2i and 2i + 1) at a
// time; the low nibbles (even columns) and high nibbles (odd columns) become two vectors of
// unsigned bytes w + 12 (w = 2 × e2m1, an integer in [-12, 12]) by one byte permute each
// (VBMI's vpermb on a 16-entry table repeated 4 times, so the nibble's neighbouring bits do not
// matter). The activation's integers x (|x| < 2^18 in units of their block's 2^E) are three
// signed byte slices x = x2·2^16 + x1·2^8 + x0, stored per 128 columns as even and odd columns in
// the same byte order as the weight vectors. vpdpbusd sums 4 byte products per int32 lane;
// Horner over the slices (x2, shift 8, x1, shift 8, x0) gives each lane's exact partial sum of
// (w + 12)·x. A 128-bit lane of a 64-byte chunk is one 32-column block, so four chunks' lanes
// fold into 16 block sums by one 4 × 4 transpose-add (block 16p + 4j + L lands in lane 4L + j);
// the activation's per-block terms (exponents, 12·Σx to remove the +12) are stored in that
// order. Each block sum times 2^(e8m0 - 128 + E) is exact in fp64 and so is their sum.
//
// Two slices where the third is zero. A chunk whose values are all integers in units of 2^(E+3)
// too (no value below ~amax / 2^11: most chunks of a normalized activation) takes that unit:
// its integers are below 2^15, its top slice x2 is zero, and its chunks skip x2's two vpdpbusd
// and a shift (the kernel reads a flag per chunk). The sums are the same integers either way.
#pragma GCC optimize("fp-contract=off")
#include "kernels/avx512/fp4_int.h"

#include <immintrin.h>

#include <algorithm>
#include <climits>
#include <cmath>

#include "core/numfmt.h"
#include "kernels/avx512/int_blocks.h"
#include "kernels/avx512/vbmi.h"

namespace strata::kernels::avx512 {
namespace {

constexpr int64_t kChunk = 128;                 // columns per 64-byte weight chunk
constexpr int64_t kSliceBytes = 3 * 2 * 64;     // activation bytes per chunk
constexpr int kMaxScaleCode = 252;              // e8m0 codes whose e2m1 multiples are exact in fp32
constexpr int kBlockSumBits = 27;               // |S_b| < 32 · 12 · 2^18 < 2^27
constexpr int64_t kMaxIn = 65536;               // the prepare step's per-chunk table
constexpr int64_t kPrefetchBytes = 1024;        // ahead of the row stream (2 KB rows; 512 and 2048 measured slower)
constexpr int kCoarseStep = 3;                  // 2^18 / 2^3 leaves the integers below 2^15: two slices

int ceil_log2(int64_t v) {
  int b = 0;
  while ((int64_t(1) << b) < v) ++b;
  return b;
}

// Signed byte digit of v (in [-128, 127]) and the rest, (v - digit) / 256, both exact.
inline __m512i low_digit(__m512i v) {
  const __m512i b = _mm512_set1_epi32(128), m = _mm512_set1_epi32(255);
  return _mm512_sub_epi32(_mm512_and_si512(_mm512_add_epi32(v, b), m), b);
}

// (GCC 12's _mm512_reduce_max_epi32 warns about its own undefined vector; a store and a scalar
// loop per row cost a sixth of this GEMV at 4096 columns)
inline int lane_max(__m512i v) {
  __m256i a = _mm256_max_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
  __m128i b = _mm_max_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
  b = _mm_max_epi32(b, _mm_shuffle_epi32(b, 0x4E));
  b = _mm_max_epi32(b, _mm_shuffle_epi32(b, 0xB1));
  return _mm_cvtsi128_si32(b);
}
inline int lane_min(__m512i v) { return -lane_max(_mm512_sub_epi32(_mm512_setzero_si512(), v)); }

// Whether the chunk's values are all integers in units of 2^e. With e = E + 3 they are then
// below 2^15 (an e4m3 chunk's largest, at most 1.75 · 2^14 of them): x2 is zero. The flag the
// kernel reads is taken from the digits themselves, so it holds whatever this decides.
bool coarse_unit_fits(const double* x, int e) {
  const __m512d unit = _mm512_set1_pd(std::ldexp(1.0, -e));
  __mmask8 off = 0;
  for (int64_t k = 0; k < kChunk; k += 8) {
    const __m512d a = _mm512_mul_pd(_mm512_loadu_pd(x + k), unit);
    off |= _mm512_cmp_pd_mask(_mm512_roundscale_pd(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), a, _CMP_NEQ_UQ);
  }
  return off == 0;
}

}  // namespace

bool fp4_int_supported(const LinearWeight& w) {
  return has_vbmi() && w.format == WeightFormat::fp4 && w.in % 512 == 0 && w.in > 0 && w.in <= kMaxIn;
}

bool fp4_int_prepare(const double* x, int64_t in, void* scratch, Fp4IntActivation& a) {
  if (in % 512 != 0 || in > kMaxIn) return false;
  auto* slices = static_cast<int8_t*>(scratch);
  auto* exps = reinterpret_cast<int32_t*>(slices + 3 * in);
  auto* corr = exps + in / 32;
  auto* two_slices = reinterpret_cast<uint8_t*>(corr + in / 32);
  const int64_t chunks = in / kChunk;
  const __m512d abs_mask = _mm512_castsi512_pd(_mm512_set1_epi64(INT64_MAX));

  // Each 128-column chunk's unit 2^E: amax below 2^18 units (E is below the quantizer's own
  // 2^(scale - 9) for an FP8-quantized block, so its values are integers; checked below). An
  // all-zero chunk takes a neighbour's E, which keeps the rows' exponent span honest.
  int chunk_unit[kMaxIn / kChunk];
  int e_fill = INT_MIN;
  for (int64_t c = 0; c < chunks; ++c) {
    __m512d m = _mm512_setzero_pd();
    for (int64_t k = 0; k < kChunk; k += 8) m = _mm512_max_pd(m, _mm512_and_pd(_mm512_loadu_pd(x + c * kChunk + k), abs_mask));
    const double amax = _mm512_reduce_max_pd(m);
    for (int64_t k = 0; k < kChunk; ++k)  // NaN never wins a max: look for it directly
      if (!std::isfinite(x[c * kChunk + k])) return false;
    int e = amax > 0 ? std::ilogb(amax) - 17 : INT_MIN;
    if (e != INT_MIN && coarse_unit_fits(x + c * kChunk, e + kCoarseStep)) e += kCoarseStep;
    chunk_unit[c] = e;
    if (e != INT_MIN && e_fill == INT_MIN) e_fill = e;
  }
  if (e_fill == INT_MIN) e_fill = 0;

  const __m512i evens = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i odds = _mm512_add_epi32(evens, _mm512_set1_epi32(1));
  int32_t chunk_e[4];
  for (int64_t c = 0; c < chunks; ++c) {
    const int e = chunk_unit[c] == INT_MIN ? e_fill : chunk_unit[c];
    chunk_e[c % 4] = e;
    const __m512d unit = _mm512_set1_pd(std::ldexp(1.0, -e));
    int8_t* dst = slices + c * kSliceBytes;
    int32_t block_sum[4];
    __m512i top = _mm512_setzero_si512();  // any nonzero x2 digit
    for (int64_t k = 0; k < kChunk; k += 32) {
      __m512i v[2];
      for (int h = 0; h < 2; ++h) {  // 16 columns: integers, checked exact
        const __m512d a0 = _mm512_mul_pd(_mm512_loadu_pd(x + c * kChunk + k + 16 * h), unit);
        const __m512d a1 = _mm512_mul_pd(_mm512_loadu_pd(x + c * kChunk + k + 16 * h + 8), unit);
        const __m256i i0 = _mm512_cvtpd_epi32(a0), i1 = _mm512_cvtpd_epi32(a1);
        if (_mm512_cmp_pd_mask(_mm512_cvtepi32_pd(i0), a0, _CMP_NEQ_UQ) |
            _mm512_cmp_pd_mask(_mm512_cvtepi32_pd(i1), a1, _CMP_NEQ_UQ))
          return false;
        v[h] = _mm512_inserti64x4(_mm512_castsi256_si512(i0), i1, 1);
      }
      block_sum[k / 32] = _mm512_reduce_add_epi32(_mm512_add_epi32(v[0], v[1]));
      const __m512i parts[2] = {_mm512_permutex2var_epi32(v[0], evens, v[1]),
                                _mm512_permutex2var_epi32(v[0], odds, v[1])};
      for (int h = 0; h < 2; ++h) {
        const __m512i d0 = low_digit(parts[h]);
        const __m512i r1 = _mm512_srai_epi32(_mm512_sub_epi32(parts[h], d0), 8);
        const __m512i d1 = low_digit(r1);
        const __m512i d2 = _mm512_srai_epi32(_mm512_sub_epi32(r1, d1), 8);
        const __m512i d[3] = {d0, d1, d2};
        top = _mm512_or_si512(top, d2);
        for (int s = 0; s < 3; ++s)  // byte i of (slice s, half h) is column 2i + h
          _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + (2 * s + h) * 64 + k / 2), _mm512_cvtepi32_epi8(d[s]));
      }
    }
    two_slices[c] = _mm512_test_epi32_mask(top, top) == 0;
    // block 4c + L of group p = c / 4 (j = c % 4) goes to lane 4L + j
    const int64_t p = c / 4, j = c % 4;
    for (int L = 0; L < 4; ++L) corr[16 * p + 4 * L + j] = 12 * block_sum[L];
    if (j == 3)
      for (int jj = 0; jj < 4; ++jj)
        for (int L = 0; L < 4; ++L) exps[16 * p + 4 * L + jj] = chunk_e[jj] - 128;
  }
  a.exp_min = INT_MAX;
  a.exp_max = INT_MIN;
  for (int64_t b = 0; b < in / 32; ++b) a.exp_min = std::min(a.exp_min, exps[b]), a.exp_max = std::max(a.exp_max, exps[b]);
  a.slices = slices;
  a.exps = exps;
  a.corr = corr;
  a.two_slices = two_slices;
  a.in = in;
  return true;
}

namespace {

// The e8m0 scale codes of 512-column step p of a weight row (16 blocks), in the kernel's block
// order (block 16p + 4j + L in lane 4L + j), as int32.
inline __m512i block_codes(const uint8_t* sr, int64_t p) {
  const __m128i block_order = _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return _mm512_cvtepu8_epi32(_mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sr + 16 * p)), block_order));
}

// The exponent span of row n's block products with activation a: max - min of code_b + E_b.
// Taken only where the bound below (the row's code span plus the activation's) exceeds the limit.
int exact_span(const uint8_t* sr, const Fp4IntActivation& a, int64_t in) {
  __m512i e_max = _mm512_set1_epi32(INT_MIN), e_min = _mm512_set1_epi32(INT_MAX);
  for (int64_t p = 0; p < in / 512; ++p) {
    const __m512i e = _mm512_add_epi32(block_codes(sr, p), _mm512_load_si512(a.exps + 16 * p));
    e_max = _mm512_max_epi32(e_max, e);
    e_min = _mm512_min_epi32(e_min, e);
  }
  // a rare path: a store and a scalar reduction will do (lane_max inlined here draws GCC 12's
  // spurious -Wuninitialized from inside _mm512_extracti64x4_epi64)
  alignas(64) int32_t hi[16], lo[16];
  _mm512_store_si512(hi, e_max);
  _mm512_store_si512(lo, e_min);
  return *std::max_element(hi, hi + 16) - *std::min_element(lo, lo + 16);
}

// Weight row n against R activation rows: each 64-byte weight chunk loaded and decoded once for
// all of them (its two vpermb and a shift; the block scales' too), every row's own byte
// products, block sums and fp64 accumulator. Returns the rows taken (bit r): a row outside the
// exactness condition is left untouched for the caller's fp64 path.
//
// Per activation row the loop keeps one accumulator and the four chunks' sums, so that 4 rows
// stay in registers (with a low and a high accumulator and the exponent span tracked per row,
// GCC kept 16 vectors of state on the stack: 128 spill loads and stores a 512-column step). The
// span check uses the row's scale-code span plus the activation's exponent span, an upper bound
// of the true span; only a row that bound refuses has its true span taken (exact_span), so the
// rows taken are the same as with the exact span throughout.
template <int R>
__attribute__((target("avx512vbmi"), always_inline)) inline unsigned rows_kernel(const LinearWeight& w,
                                                                               const Fp4IntActivation* const* a,
                                                                               int64_t n, float* const* y, bool rb) {
  const int64_t in = a[0]->in;
  const auto* wr = static_cast<const uint8_t*>(w.data) + n * (in / 2);
  const uint8_t* sr = w.scale + n * (in / 32);
  const __m512i table = e2m1_offset_table(), zero = _mm512_setzero_si512();
  __m512d acc[R];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_pd();
  __m512i code_max = _mm512_setzero_si512(), code_min = _mm512_set1_epi32(255);
  for (int64_t p = 0; p < in / 512; ++p) {
    __m512i part[R][4];
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      const int64_t q = 4 * p + j;
      _mm_prefetch(reinterpret_cast<const char*>(wr + 64 * q) + kPrefetchBytes, _MM_HINT_T0);
      const __m512i raw = _mm512_loadu_si512(wr + 64 * q);
      const __m512i we = _mm512_permutexvar_epi8(raw, table);
      const __m512i wo = _mm512_permutexvar_epi8(_mm512_srli_epi16(raw, 4), table);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        const int8_t* xs = a[r]->slices + q * kSliceBytes;
        const auto ld = [&](int sl, int h) { return _mm512_load_si512(xs + (2 * sl + h) * 64); };
        __m512i t;
        if (a[r]->two_slices[q]) {  // x2 is zero: the same sum without its two products
          t = _mm512_dpbusd_epi32(zero, we, ld(1, 0));
        } else {
          t = _mm512_dpbusd_epi32(zero, we, ld(2, 0));
          t = _mm512_slli_epi32(_mm512_dpbusd_epi32(t, wo, ld(2, 1)), 8);
          t = _mm512_dpbusd_epi32(t, we, ld(1, 0));
        }
        t = _mm512_slli_epi32(_mm512_dpbusd_epi32(t, wo, ld(1, 1)), 8);
        t = _mm512_dpbusd_epi32(t, we, ld(0, 0));
        part[r][j] = _mm512_dpbusd_epi32(t, wo, ld(0, 1));
      }
    }
    const __m512i code = block_codes(sr, p);
    code_max = _mm512_max_epi32(code_max, code);
    code_min = _mm512_min_epi32(code_min, code);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const __m512i* pr = part[r];
      const __m512i t01 = _mm512_add_epi32(_mm512_unpacklo_epi32(pr[0], pr[1]), _mm512_unpackhi_epi32(pr[0], pr[1]));
      const __m512i t23 = _mm512_add_epi32(_mm512_unpacklo_epi32(pr[2], pr[3]), _mm512_unpackhi_epi32(pr[2], pr[3]));
      __m512i sum = _mm512_add_epi32(_mm512_unpacklo_epi64(t01, t23), _mm512_unpackhi_epi64(t01, t23));
      sum = _mm512_sub_epi32(sum, _mm512_load_si512(a[r]->corr + 16 * p));
      add_scaled(sum, _mm512_add_epi32(code, _mm512_load_si512(a[r]->exps + 16 * p)), acc[r]);
    }
  }
  const int c_max = lane_max(code_max), c_min = lane_min(code_min);
  if (c_max > kMaxScaleCode) return 0;
  const int span_limit = 53 - kBlockSumBits - ceil_log2(in / 32);
  unsigned taken = 0;
  for (int r = 0; r < R; ++r) {
    if ((c_max + a[r]->exp_max) - (c_min + a[r]->exp_min) > span_limit && exact_span(sr, *a[r], in) > span_limit)
      continue;
    const float v = float(_mm512_reduce_add_pd(acc[r]));  // exact: any order
    y[r][n] = rb ? round_bf16(v) : v;
    taken |= 1u << r;
  }
  return taken;
}

}  // namespace

__attribute__((target("avx512vbmi"))) bool fp4_int_row(const LinearWeight& w, const Fp4IntActivation& a, int64_t n,
                                                      float* y, bool rb) {
  const Fp4IntActivation* act[1] = {&a};
  float* out[1] = {y};
  return rows_kernel<1>(w, act, n, out, rb) != 0;
}

__attribute__((target("avx512vbmi"))) unsigned fp4_int_rows(const LinearWeight& w, const Fp4IntActivation* const* a,
                                                           int count, int64_t n, float* const* y, bool rb) {
  switch (count) {
    case 1: return rows_kernel<1>(w, a, n, y, rb);
    case 2: return rows_kernel<2>(w, a, n, y, rb);
    case 3: return rows_kernel<3>(w, a, n, y, rb);
    default: return rows_kernel<4>(w, a, n, y, rb);
  }
}

}  // namespace strata::kernels::avx512
