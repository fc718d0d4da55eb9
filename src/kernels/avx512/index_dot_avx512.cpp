// The indexer's FP4 q · k products as VNNI byte products (kernels/index_dot.h says why exact).
//
// Layout. 16 keys side by side: their 64 code bytes are transposed as dwords (lane j of vector g
// = bytes 4g .. 4g+3 of key j), then split into low nibbles (even columns) and high nibbles (odd
// columns) and mapped to unsigned bytes 2·e2m1 + 12 by one byte shuffle: 32 vectors, vector g < 16
// the even columns 8g, 8g+2, 8g+4, 8g+6 and g >= 16 the odd ones, each inside block (g % 16) / 4.
// A query's integers are stored even columns then odd, so its dword g is the same 4 columns,
// broadcast to the 16 keys. vpdpbusd sums the 4 products per key; 8 of them make a block's sum
// for 16 keys. Minus 12 × the block's query sum (the +12), times 2^(query exponent + key scale
// - 128 - 128), summed over 4 blocks in fp64: exact, then rounded once to fp32.
#include "kernels/index_dot.h"

#include <immintrin.h>

// GCC 12's AVX-512 headers build these intrinsics' results from an undefined vector and then
// warn about it once they are inlined here (the maskz forms are the other way around it).
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>

#include "core/cpu.h"
#include "kernels/avx512/int_blocks.h"
#include "kernels/convert.h"
#include "kernels/dot.h"

namespace strata::kernels {
namespace {

constexpr int64_t kDim = 128, kBlock = 32, kBlocks = kDim / kBlock, kCodeBytes = kDim / 2;
constexpr int kMaxScaleCode = 252;  // e2m1 × 2^(code - 127) finite in fp32
constexpr int kSpanLimit = 53 - 13 - 2;  // |block sum| < 32 · 16 · 12 < 2^13, 4 blocks

// 16 × 16 dwords: v[j] lane g -> v[g] lane j.
inline void transpose16(__m512i v[16]) {
  __m512i t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(v[i], v[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(v[i], v[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    v[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
    v[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
    v[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
    v[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  // 128-bit lane L of v[4a + c] now holds rows 4a .. 4a+3 of column 4L + c; exchanging
  // 128-bit lanes puts those of column 4L + c side by side
  for (int c = 0; c < 4; ++c) {
    const __m512i a0 = v[c], a1 = v[c + 4], a2 = v[c + 8], a3 = v[c + 12];
    const __m512i b0 = _mm512_shuffle_i32x4(a0, a1, 0x44), b1 = _mm512_shuffle_i32x4(a0, a1, 0xEE);
    const __m512i b2 = _mm512_shuffle_i32x4(a2, a3, 0x44), b3 = _mm512_shuffle_i32x4(a2, a3, 0xEE);
    t[c] = _mm512_shuffle_i32x4(b0, b2, 0x88);
    t[c + 4] = _mm512_shuffle_i32x4(b0, b2, 0xDD);
    t[c + 8] = _mm512_shuffle_i32x4(b1, b3, 0x88);
    t[c + 12] = _mm512_shuffle_i32x4(b1, b3, 0xDD);
  }
  for (int i = 0; i < 16; ++i) v[i] = t[i];
}

}  // namespace

bool prepare_index_queries_fp4(const float* q, int64_t heads, int64_t dim, IndexQueriesFp4& out) {
  if (active_isa() != Isa::avx512 || dim != kDim || heads <= 0 || heads % 4 != 0) return false;
  out.heads = heads;
  out.dim = dim;
  out.values = q;
  out.bytes.reserve(size_t(heads * kDim));
  out.exps.assign(size_t(heads * kBlocks), 0);
  out.corr.assign(size_t(heads * kBlocks), 0);
  for (int64_t h = 0; h < heads; ++h) {
    const float* qh = q + h * kDim;
    int e[kBlocks], fill = INT_MIN;
    for (int64_t b = 0; b < kBlocks; ++b) {
      float amax = 0;
      for (int64_t d = b * kBlock; d < (b + 1) * kBlock; ++d) {
        if (!std::isfinite(qh[d])) return false;
        amax = std::max(amax, std::fabs(qh[d]));
      }
      e[b] = amax > 0 ? std::ilogb(amax) - 3 : INT_MIN;  // |q| / 2^e < 16
      if (fill == INT_MIN) fill = e[b];
    }
    int8_t* bytes = out.bytes.data() + h * kDim;
    for (int64_t b = 0; b < kBlocks; ++b) {
      const int eb = e[b] == INT_MIN ? (fill == INT_MIN ? 0 : fill) : e[b];
      int32_t sum = 0;
      for (int64_t d = b * kBlock; d < (b + 1) * kBlock; ++d) {
        const double v = std::ldexp(double(qh[d]), -eb);
        if (v != std::nearbyint(v) || std::fabs(v) > 15) return false;  // not FP4-quantized
        bytes[(d % 2) * kCodeBytes + d / 2] = int8_t(v);
        sum += int32_t(v);
      }
      out.exps[size_t(h * kBlocks + b)] = eb - 128;
      out.corr[size_t(h * kBlocks + b)] = 12 * sum;
    }
  }
  return true;
}

namespace {

// What the 16 keys of a group share in every head's finish.
struct KeyGroup {
  IndexKeyCodes codes;
  __m512i scale[kBlocks];  // e8m0 codes per block, lane = key
  __mmask16 bad;           // keys whose values the route cannot take (scale, NaN, not FP4 values)
  __m512i span;            // max - min of the key's scales
  float* z;                // z + t0
  int64_t ldz;
};

// A key's fp32 values as the cache's unpack gives them.
void key_values(IndexKeyCodes codes, const uint8_t* k, float* kv) {
  if (codes == IndexKeyCodes::fp4)
    convert_ops().e2m1_blocks_to_f32(k, k + kCodeBytes, size_t(kBlock), kv, size_t(kDim));
  else
    convert_ops().e4m3_blocks_to_f32(k, k + kDim, size_t(kBlock), kv, size_t(kDim));
}

// FP8-stored keys hold FP4 fake-quantized values: per 32-block, value = k · 2^E with k an
// integer in [-12, 12] for E = ilogb(amax) - 3 (what the FP4 quantizer makes; checked, else the
// key is marked bad). Writes the key's bytes k + 12 (even columns, then odd) and E + 128, the
// e8m0 code an FP4 key would store for the same values (value = (k / 2) · 2^(code - 127)).
bool fp8_key_bytes(const uint8_t* k, uint8_t* bytes, int32_t* code) {
  alignas(64) float v[kDim];
  key_values(IndexKeyCodes::fp8, k, v);
  const __m512i evens = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i odds = _mm512_add_epi32(evens, _mm512_set1_epi32(1)), twelve = _mm512_set1_epi32(12);
  bool ok = true;
  for (int64_t b = 0; b < kBlocks; ++b) {
    const __m512 a = _mm512_load_ps(v + b * kBlock), c = _mm512_load_ps(v + b * kBlock + 16);
    const __mmask16 nan = _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(c, c, _CMP_UNORD_Q);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(a), _mm512_abs_ps(c)));
    const int e = amax > 0 && amax <= 3.4e38f ? std::ilogb(amax) - 3 : 0;
    ok = ok && nan == 0 && amax <= 3.4e38f;
    const __m512 m = _mm512_set1_ps(float(-e));
    const __m512 as = _mm512_scalef_ps(a, m), cs = _mm512_scalef_ps(c, m);
    const __m512i ia = _mm512_cvtps_epi32(as), ic = _mm512_cvtps_epi32(cs);
    const __mmask16 inexact = _mm512_cmp_ps_mask(_mm512_cvtepi32_ps(ia), as, _CMP_NEQ_UQ) |
                              _mm512_cmp_ps_mask(_mm512_cvtepi32_ps(ic), cs, _CMP_NEQ_UQ) |
                              _mm512_cmpgt_epi32_mask(_mm512_abs_epi32(ia), twelve) |
                              _mm512_cmpgt_epi32_mask(_mm512_abs_epi32(ic), twelve);
    ok = ok && inexact == 0;
    _mm_storeu_si128(reinterpret_cast<__m128i*>(bytes + 16 * b),
                     _mm512_cvtepi32_epi8(_mm512_add_epi32(_mm512_permutex2var_epi32(ia, evens, ic), twelve)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(bytes + kCodeBytes + 16 * b),
                     _mm512_cvtepi32_epi8(_mm512_add_epi32(_mm512_permutex2var_epi32(ia, odds, ic), twelve)));
    code[b] = e + 128;
  }
  return ok;
}

// Head h's 16 block sums (per block, lane = key) to z[h][t0 ..]: exact in fp64, rounded once;
// pairs outside the condition get the canonical dot of the values.
void finish(const IndexQueriesFp4& q, int64_t h, __m512i s0, __m512i s1, __m512i s2, __m512i s3,
            const uint8_t* const* keys, int64_t t0, int n, const KeyGroup& g) {
  const __m512i sums[kBlocks] = {s0, s1, s2, s3};
  __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
  int q_max = INT_MIN, q_min = INT_MAX;
  for (int b = 0; b < kBlocks; ++b) {
    const int32_t qe = q.exps[size_t(h * kBlocks + b)];
    q_max = std::max(q_max, qe);
    q_min = std::min(q_min, qe);
    const __m512i sum = _mm512_sub_epi32(sums[b], _mm512_set1_epi32(q.corr[size_t(h * kBlocks + b)]));
    // term = q_int · k_int · 2^(E + scale - 127 - 1), with qe = E - 128 (k_int = 2 · e2m1)
    const __m512i e = _mm512_add_epi32(g.scale[b], _mm512_set1_epi32(qe));
    avx512::add_scaled(sum, e, lo, hi);
  }
  alignas(64) float out[16];
  _mm256_store_ps(out, _mm512_cvtpd_ps(lo));
  _mm256_store_ps(out + 8, _mm512_cvtpd_ps(hi));
  const __mmask16 canonical = g.bad | _mm512_cmpgt_epi32_mask(g.span, _mm512_set1_epi32(kSpanLimit - (q_max - q_min)));
  float* zh = g.z + h * g.ldz;
  if (canonical == 0 && n == 16) {
    _mm512_storeu_ps(zh, _mm512_load_ps(out));
    return;
  }
  for (int j = 0; j < n; ++j) {
    if (canonical >> j & 1) {
      alignas(64) float kv[kDim];
      key_values(g.codes, keys[t0 + j], kv);
      zh[j] = dot(q.values + h * kDim, kv, kDim);
    } else {
      zh[j] = out[j];
    }
  }
}

}  // namespace

void index_dots(const IndexQueriesFp4& q, IndexKeyCodes key_codes, const uint8_t* const* keys, int64_t nt, float* z,
                int64_t ldz) {
  const __m512i table = avx512::e2m1_offset_table(), low4 = _mm512_set1_epi8(0x0F);
  alignas(64) __m512i codes[32];
  alignas(64) int32_t scale[kBlocks][16];
  for (int64_t t0 = 0; t0 < nt; t0 += 16) {
    const int n = int(std::min<int64_t>(16, nt - t0));
    __m512i v[16];
    __mmask16 bad = 0;
    if (key_codes == IndexKeyCodes::fp4) {
      for (int j = 0; j < 16; ++j) {
        const uint8_t* k = keys[t0 + (j < n ? j : 0)];  // a partial group repeats its first key
        v[j] = _mm512_loadu_si512(k);
        for (int b = 0; b < kBlocks; ++b) scale[b][j] = k[kCodeBytes + b];
      }
      transpose16(v);
      for (int g = 0; g < 16; ++g) {
        codes[g] = _mm512_shuffle_epi8(table, _mm512_and_si512(v[g], low4));
        codes[16 + g] = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(v[g], 4), low4));
      }
    } else {
      __m512i odd[16];
      for (int j = 0; j < 16; ++j) {
        alignas(64) uint8_t bytes[kDim];
        int32_t code[kBlocks];
        if (!fp8_key_bytes(keys[t0 + (j < n ? j : 0)], bytes, code)) bad = __mmask16(bad | (1u << j));
        v[j] = _mm512_load_si512(bytes);
        odd[j] = _mm512_load_si512(bytes + kCodeBytes);
        for (int b = 0; b < kBlocks; ++b) scale[b][j] = code[b];
      }
      transpose16(v);
      transpose16(odd);
      for (int g = 0; g < 16; ++g) codes[g] = v[g], codes[16 + g] = odd[g];
    }
    KeyGroup group;
    __m512i sk_max = _mm512_set1_epi32(INT_MIN), sk_min = _mm512_set1_epi32(INT_MAX);
    for (int b = 0; b < kBlocks; ++b) {
      group.scale[b] = _mm512_load_si512(scale[b]);
      sk_max = _mm512_max_epi32(sk_max, group.scale[b]);
      sk_min = _mm512_min_epi32(sk_min, group.scale[b]);
    }
    group.codes = key_codes;
    group.bad = key_codes == IndexKeyCodes::fp4 ? _mm512_cmpgt_epi32_mask(sk_max, _mm512_set1_epi32(kMaxScaleCode)) : bad;
    group.span = _mm512_sub_epi32(sk_max, sk_min);
    group.z = z + t0;
    group.ldz = ldz;
    for (int64_t h0 = 0; h0 < q.heads; h0 += 4) {
      // 4 heads × 4 blocks of 16 keys' sums (named arrays: a 2-D one stays in memory)
      __m512i s0[kBlocks], s1[kBlocks], s2[kBlocks], s3[kBlocks];
      for (int b = 0; b < kBlocks; ++b) s0[b] = s1[b] = s2[b] = s3[b] = _mm512_setzero_si512();
      const int8_t* qb = q.bytes.data() + h0 * kDim;
#pragma GCC unroll 32
      for (int g = 0; g < 32; ++g) {
        const int b = (g % 16) / 4;
        const __m512i c = codes[g];
        int32_t d0, d1, d2, d3;
        std::memcpy(&d0, qb + 4 * g, 4);
        std::memcpy(&d1, qb + kDim + 4 * g, 4);
        std::memcpy(&d2, qb + 2 * kDim + 4 * g, 4);
        std::memcpy(&d3, qb + 3 * kDim + 4 * g, 4);
        s0[b] = _mm512_dpbusd_epi32(s0[b], c, _mm512_set1_epi32(d0));
        s1[b] = _mm512_dpbusd_epi32(s1[b], c, _mm512_set1_epi32(d1));
        s2[b] = _mm512_dpbusd_epi32(s2[b], c, _mm512_set1_epi32(d2));
        s3[b] = _mm512_dpbusd_epi32(s3[b], c, _mm512_set1_epi32(d3));
      }
      finish(q, h0 + 0, s0[0], s0[1], s0[2], s0[3], keys, t0, n, group);
      finish(q, h0 + 1, s1[0], s1[1], s1[2], s1[3], keys, t0, n, group);
      finish(q, h0 + 2, s2[0], s2[1], s2[2], s2[3], keys, t0, n, group);
      finish(q, h0 + 3, s3[0], s3[1], s3[2], s3[3], keys, t0, n, group);
    }
  }
}

}  // namespace strata::kernels
