// AVX-512 sparse attention, bit for bit the scalar reference (scalar/sparse_attention_scalar.cpp):
// the entries are widened to fp64 once per call and shared by every head; q·c_j are canonical
// dots (lanes k % 16, two fp64 vectors) for 4 entries at a time (8 FMA chains instead of 2);
// P·V keeps the reference's order (entries in list order, one fp64 fma per element: the product
// bf16(p) · c is exact, so fma = the reference's multiply-then-add) over 128-dim tiles held in
// 16 registers. Softmax statistics are the shared sink_softmax.
#pragma GCC optimize("fp-contract=off")
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/numfmt.h"
#include "kernels/aligned_buffer.h"
#include "kernels/dot.h"
#include "kernels/parallel.h"
#include "kernels/sparse_attention.h"

namespace strata::kernels::avx512 {
namespace {

inline float fold(__m512d lo, __m512d hi) {
  alignas(64) double l[16];
  _mm512_store_pd(l, lo);
  _mm512_store_pd(l + 8, hi);
  return float(fold16(l));
}

// z[j] = canonical dot(q, c_j) for j in [0, n); q and c in fp64, dim % 16 == 0.
void dots(const double* q, const double* c, int64_t n, int64_t dim, float* z) {
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    __m512d lo[4], hi[4];
    for (int i = 0; i < 4; ++i) lo[i] = hi[i] = _mm512_setzero_pd();
    for (int64_t k = 0; k < dim; k += 16) {
      const __m512d ql = _mm512_loadu_pd(q + k), qh = _mm512_loadu_pd(q + k + 8);
      for (int i = 0; i < 4; ++i) {
        const double* e = c + (j + i) * dim + k;
        lo[i] = _mm512_fmadd_pd(ql, _mm512_loadu_pd(e), lo[i]);
        hi[i] = _mm512_fmadd_pd(qh, _mm512_loadu_pd(e + 8), hi[i]);
      }
    }
    for (int i = 0; i < 4; ++i) z[j + i] = fold(lo[i], hi[i]);
  }
  for (; j < n; ++j) {
    __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
    for (int64_t k = 0; k < dim; k += 16) {
      lo = _mm512_fmadd_pd(_mm512_loadu_pd(q + k), _mm512_loadu_pd(c + j * dim + k), lo);
      hi = _mm512_fmadd_pd(_mm512_loadu_pd(q + k + 8), _mm512_loadu_pd(c + j * dim + k + 8), hi);
    }
    z[j] = fold(lo, hi);
  }
}

}  // namespace

void sparse_attention(const float* q, int64_t heads, int64_t dim, const float* const* entries, int64_t n,
                      const float* sink, float scale, float* out) {
  // Reused, not a fresh vector: a prefill row's entries are up to ~2.6 MB of fp64 on V4-Flash,
  // which a vector cleared (and, from the allocator, faulted in) for every row and layer.
  // Through a pointer: inside the job below, `widened` would name the worker's own buffer.
  thread_local AlignedBuffer<double> widened;
  widened.reserve(static_cast<size_t>(std::max<int64_t>(1, n) * dim));
  double* c = widened.data();
  for (int64_t j = 0; j < n; ++j)
    for (int64_t d = 0; d < dim; ++d) c[j * dim + d] = double(entries[j][d]);
  parallel_for(heads, std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(1, n * dim)), [&](int64_t hb, int64_t he) {
    std::vector<float> z(static_cast<size_t>(n > 0 ? n : 1));
    std::vector<double> qd(static_cast<size_t>(dim)), pw(static_cast<size_t>(n > 0 ? n : 1));
    for (int64_t h = hb; h < he; ++h) {
      const float* qh = q + h * dim;
      for (int64_t d = 0; d < dim; ++d) qd[size_t(d)] = double(qh[d]);
      dots(qd.data(), c, n, dim, z.data());
      for (int64_t j = 0; j < n; ++j) z[size_t(j)] = z[size_t(j)] * scale;
      const float lf = sink_softmax(z.data(), n, sink[h]);
      for (int64_t j = 0; j < n; ++j) pw[size_t(j)] = double(round_bf16(z[size_t(j)]));
      for (int64_t d0 = 0; d0 < dim; d0 += 128) {
        const int tiles = int(std::min<int64_t>(128, dim - d0) / 8);
        __m512d acc[16];
        for (int t = 0; t < 16; ++t) acc[t] = _mm512_setzero_pd();
        for (int64_t j = 0; j < n; ++j) {
          const __m512d w = _mm512_set1_pd(pw[size_t(j)]);
          const double* cj = c + j * dim + d0;
          if (tiles == 16) {
#pragma GCC unroll 16
            for (int t = 0; t < 16; ++t) acc[t] = _mm512_fmadd_pd(w, _mm512_loadu_pd(cj + 8 * t), acc[t]);
          } else {
            for (int t = 0; t < tiles; ++t) acc[t] = _mm512_fmadd_pd(w, _mm512_loadu_pd(cj + 8 * t), acc[t]);
          }
        }
        alignas(64) double a[128];
        for (int t = 0; t < tiles; ++t) _mm512_store_pd(a + 8 * t, acc[t]);
        for (int i = 0; i < 8 * tiles; ++i) out[h * dim + d0 + i] = round_bf16(float(a[i]) / lf);
      }
    }
  });
}

}  // namespace strata::kernels::avx512
