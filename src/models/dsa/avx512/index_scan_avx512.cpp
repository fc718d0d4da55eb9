// index_scan.h with AVX-512: heads across the lanes (eight heads a register), two keys a pass
// sharing the query's loads. The head dots are exact, so this order gives the reference's bits;
// the head sum keeps the canonical lanes (heads j and j + 16 in one lane) and fold.
#pragma GCC optimize("fp-contract=off")
// GCC 12 flags _mm512_extractf64x4_pd's undefined pass-through operand once inlined here.
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/avx512/fold8.h"
#include "models/dsa/index_scan.h"

namespace strata::dsa::avx512 {

namespace {

// relu(fp32(d)) · w in fp32 for eight heads, widened: max(0, x) keeps a -0 as the scalar
// std::max(0.0f, x) does (MAXPS returns its second operand when both are zero).
inline __m512d head_terms(__m512d d, const float* w) {
  const __m256 x = _mm512_cvtpd_ps(d);
  const __m256 r = _mm256_max_ps(_mm256_setzero_ps(), x);
  return _mm512_cvtps_pd(_mm256_mul_ps(r, _mm256_loadu_ps(w)));
}

using kernels::avx512::fold16_pd;

constexpr int kKeys = 4;       // keys a pass, sharing each load of the query
constexpr int kBlockHeads = 32;  // heads a pass: their query block (128 x 32 doubles = 32 KB) stays in L1
constexpr int64_t kTile = 64;   // keys whose lane sums are kept while the head blocks go by

// Adds the head terms of heads [h0, h0 + 8·nc) of kKeys keys (entries e[k]) into their lanes.
void block_pass(const double* qT, const float* w, int64_t heads, int64_t h0, int nc, const uint8_t* const* e,
                double (*lanes)[16]) {
  const double* lut = e4m3_double_table();
  __m512d acc[kKeys][kBlockHeads / 8];
  for (auto& a : acc)
    for (auto& c : a) c = _mm512_setzero_pd();
  for (int64_t i = 0; i < kIndexDim; ++i) {
    const double* q = qT + i * heads + h0;
    __m512d kb[kKeys];
    for (int k = 0; k < kKeys; ++k) kb[k] = _mm512_set1_pd(lut[e[k][i]]);
    for (int c = 0; c < kBlockHeads / 8; ++c) {
      if (c >= nc) break;
      const __m512d qc = _mm512_loadu_pd(q + c * 8);
      for (int k = 0; k < kKeys; ++k) acc[k][c] = _mm512_fmadd_pd(qc, kb[k], acc[k][c]);
    }
  }
  for (int c = 0; c < nc; ++c) {  // heads h0 + 8c ..: lanes 0-7 when their chunk is even, 8-15 when odd
    const int half = int((h0 / 8 + c) & 1) * 8;
    for (int k = 0; k < kKeys; ++k) {
      double* l = lanes[k] + half;
      _mm512_storeu_pd(l, _mm512_add_pd(_mm512_loadu_pd(l), head_terms(acc[k][c], w + h0 + c * 8)));
    }
  }
}

}  // namespace

void index_scan(const ScanQuery& q, const cache::EntryArray& keys, int64_t first, int64_t n, float* out) {
  const double* qT = q.qT;
  const float* w = q.w;
  const int64_t heads = q.heads;
  alignas(64) double lanes[kTile][16];
  for (int64_t t0 = first; t0 < n; t0 += kTile) {
    const int64_t nt = std::min(kTile, n - t0);
    std::memset(lanes, 0, sizeof lanes);
    for (int64_t h0 = 0; h0 < heads; h0 += kBlockHeads) {
      const int nc = int(std::min<int64_t>(kBlockHeads, heads - h0) / 8);
      for (int64_t g = 0; g < nt; g += kKeys) {
        // A short last group repeats its last key; its extra lanes are not read.
        const uint8_t* e[kKeys];
        for (int k = 0; k < kKeys; ++k) e[k] = keys.entry(t0 + std::min<int64_t>(g + k, nt - 1));
        double(*l)[16] = lanes + g;
        double spare[kKeys][16];
        if (g + kKeys > nt) {
          for (int k = 0; k < kKeys; ++k) std::memcpy(spare[k], g + k < nt ? lanes[g + k] : lanes[nt - 1], sizeof spare[k]);
          l = spare;
        }
        block_pass(qT, w, heads, h0, nc, e, l);
        if (l == spare)
          for (int64_t k = 0; g + k < nt; ++k) std::memcpy(lanes[g + k], spare[k], sizeof spare[k]);
      }
    }
    for (int64_t k = 0; k < nt; ++k) {
      float ks;
      std::memcpy(&ks, keys.entry(t0 + k) + kIndexDim, 4);
      out[t0 + k - first] = float(fold16_pd(_mm512_loadu_pd(lanes[k]), _mm512_loadu_pd(lanes[k] + 8))) * ks;
    }
  }
}

}  // namespace strata::dsa::avx512
