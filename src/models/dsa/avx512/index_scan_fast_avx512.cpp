// index_scan.h's fast scan with AVX-512 BF16: sixteen heads a register, one fp32 lane a head, each
// vdpbf16ps step the query's column pair against the key's pair broadcast, so every lane runs the
// definition's sequence. Four keys a pass share the query's loads; the head terms go into the
// canonical fp64 lanes as the exact scan's do.
#pragma GCC optimize("fp-contract=off")
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/avx512/fold8.h"
#include "models/dsa/index_scan.h"

namespace strata::dsa::avx512 {

namespace {

constexpr int kKeys = 4;        // keys a pass, sharing each load of the query
constexpr int kBlockHeads = 64;  // heads a pass (four registers)

// The e4m3 → bf16 table's 128 magnitudes in four registers, for vpermi2w.
struct Bf16Table {
  __m512i t[4];
  Bf16Table() {
    const uint16_t* bf = e4m3_bf16_table();
    for (int i = 0; i < 4; ++i) t[i] = _mm512_loadu_si512(bf + 32 * i);
  }
};

// 128 codes → 128 bf16 values (64 column pairs as 32-bit words, the even column low).
inline void decode_key(const uint8_t* codes, const Bf16Table& tab, uint32_t* pairs) {
  const __m512i sign_bit = _mm512_set1_epi16(0x80), bit6 = _mm512_set1_epi16(0x40);
  for (int c = 0; c < 4; ++c) {
    const __m512i v = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + 32 * c)));
    const __m512i lo = _mm512_permutex2var_epi16(tab.t[0], v, tab.t[1]);  // magnitudes 0-63 (bits 0-5)
    const __m512i hi = _mm512_permutex2var_epi16(tab.t[2], v, tab.t[3]);  // 64-127
    const __m512i mag = _mm512_mask_blend_epi16(_mm512_test_epi16_mask(v, bit6), lo, hi);
    const __m512i sign = _mm512_slli_epi16(_mm512_and_si512(v, sign_bit), 8);
    _mm512_storeu_si512(pairs + 16 * c, _mm512_or_si512(mag, sign));
  }
}

// Adds the head terms of heads [h0, h0 + 16·nc) (the last block's upper half padding when
// half_tail) of kKeys keys into their lanes.
void block_pass(const ScanQuery& q, int64_t stride, int64_t h0, int nc, bool half_tail,
                const uint32_t (*kp)[kIndexPairs], double (*lanes)[16]) {
  __m512 acc[kKeys][kBlockHeads / 16];
  for (auto& a : acc)
    for (auto& c : a) c = _mm512_setzero_ps();
  for (int64_t p = 0; p < kIndexPairs; ++p) {
    const uint32_t* qp = q.pairs + p * stride + h0;
    __m512i kb[kKeys];
    for (int k = 0; k < kKeys; ++k) kb[k] = _mm512_set1_epi32(int(kp[k][p]));
    for (int c = 0; c < kBlockHeads / 16; ++c) {
      if (c >= nc) break;
      const __m512bh qc = (__m512bh)_mm512_loadu_si512(qp + 16 * c);
      for (int k = 0; k < kKeys; ++k) acc[k][c] = _mm512_dpbf16_ps(acc[k][c], qc, (__m512bh)kb[k]);
    }
  }
  for (int c = 0; c < nc; ++c) {
    const bool half = half_tail && c == nc - 1;
    const float* w = q.w + h0 + 16 * c;
    const __m512 wv = half ? _mm512_castps256_ps512(_mm256_loadu_ps(w)) : _mm512_loadu_ps(w);
    for (int k = 0; k < kKeys; ++k) {
      const __m512 t = _mm512_mul_ps(_mm512_max_ps(_mm512_setzero_ps(), acc[k][c]), wv);
      double* l = lanes[k];
      _mm512_storeu_pd(l, _mm512_add_pd(_mm512_loadu_pd(l), _mm512_cvtps_pd(_mm512_castps512_ps256(t))));
      if (!half)
        _mm512_storeu_pd(l + 8, _mm512_add_pd(_mm512_loadu_pd(l + 8),
                                              _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(t), 1)))));
    }
  }
}

}  // namespace

void index_scan_fast(const ScanQuery& q, const cache::EntryArray& keys, int64_t first, int64_t n, float* out) {
  static const Bf16Table tab;
  const int64_t stride = index_pair_stride(q.heads);
  const bool odd_eight = q.heads % 16 != 0;
  alignas(64) uint32_t kp[kKeys][kIndexPairs];
  alignas(64) double lanes[kKeys][16];
  for (int64_t s0 = first; s0 < n; s0 += kKeys) {
    const int nk = int(std::min<int64_t>(kKeys, n - s0));
    for (int k = 0; k < kKeys; ++k)  // a short last group repeats its last key; its lanes are not read
      decode_key(keys.entry(s0 + std::min(k, nk - 1)), tab, kp[k]);
    std::memset(lanes, 0, sizeof lanes);
    for (int64_t h0 = 0; h0 < q.heads; h0 += kBlockHeads) {
      const int64_t hb = std::min<int64_t>(kBlockHeads, q.heads - h0);
      const int nc = int((hb + 15) / 16);
      block_pass(q, stride, h0, nc, odd_eight && h0 + kBlockHeads >= q.heads, kp, lanes);
    }
    for (int k = 0; k < nk; ++k) {
      float ks;
      std::memcpy(&ks, keys.entry(s0 + k) + kIndexDim, 4);
      out[s0 + k - first] =
          float(kernels::avx512::fold16_pd(_mm512_loadu_pd(lanes[k]), _mm512_loadu_pd(lanes[k] + 8))) * ks;
    }
  }
}

}  // namespace strata::dsa::avx512
