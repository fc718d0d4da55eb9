// AVX-512 sparse attention, bit for bit the scalar reference (scalar/sparse_attention_scalar.cpp):
// the entries are widened to fp64 once per call and shared by every head; q·c_j are canonical
// dots (lanes k % 16, two fp64 vectors), 4 heads × 2 entries at a time, folded 8 at once; P·V
// keeps the reference's order (entries in list order, one fp64 fma per element: the product
// bf16(p) · c is exact, so fma = the reference's multiply-then-add) for 4 heads × 32 dims at a
// time. Each loaded entry vector serves 4 heads: one head at a time, every head re-read all the
// entries (at 128K tokens the HCA layer's 1152 entries are 4.7 MB of fp64, 64 heads × 2 passes
// = 600 MB a step through L3: 5.2 ms of the kernel's 5.3). Softmax statistics are the shared
// sink_softmax.
#pragma GCC optimize("fp-contract=off")
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/numfmt.h"
#include "kernels/aligned_buffer.h"
#include "kernels/avx512/fold8.h"
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

// z[h · nz + j] = canonical dot(q_h, c_j) for HB heads (q: stride dim) and j in [0, n); q and
// c in fp64, dim % 16 == 0.
template <int HB>
void scores(const double* q, const double* c, int64_t n, int64_t dim, float* z, int64_t nz) {
  int64_t j = 0;
  for (; j + 2 <= n; j += 2) {
    __m512d lo[2 * HB], hi[2 * HB];  // output 2·h + e: head h, entry j + e
    for (int o = 0; o < 2 * HB; ++o) lo[o] = hi[o] = _mm512_setzero_pd();
    const double* c0 = c + j * dim;
    const double* c1 = c0 + dim;
    for (int64_t k = 0; k < dim; k += 16) {
      const __m512d c0l = _mm512_loadu_pd(c0 + k), c0h = _mm512_loadu_pd(c0 + k + 8);
      const __m512d c1l = _mm512_loadu_pd(c1 + k), c1h = _mm512_loadu_pd(c1 + k + 8);
#pragma GCC unroll 4
      for (int h = 0; h < HB; ++h) {
        const __m512d ql = _mm512_loadu_pd(q + h * dim + k), qh = _mm512_loadu_pd(q + h * dim + k + 8);
        lo[2 * h] = _mm512_fmadd_pd(ql, c0l, lo[2 * h]);
        hi[2 * h] = _mm512_fmadd_pd(qh, c0h, hi[2 * h]);
        lo[2 * h + 1] = _mm512_fmadd_pd(ql, c1l, lo[2 * h + 1]);
        hi[2 * h + 1] = _mm512_fmadd_pd(qh, c1h, hi[2 * h + 1]);
      }
    }
    if constexpr (HB == 4) {
      alignas(64) double acc[8 * 16];
      for (int o = 0; o < 8; ++o) {
        _mm512_store_pd(acc + 16 * o, lo[o]);
        _mm512_store_pd(acc + 16 * o + 8, hi[o]);
      }
      float f[8];
      fold8(acc, f);
      for (int o = 0; o < 8; ++o) z[(o / 2) * nz + j + o % 2] = f[o];
    } else {
      for (int o = 0; o < 2 * HB; ++o) z[(o / 2) * nz + j + o % 2] = fold(lo[o], hi[o]);
    }
  }
  for (; j < n; ++j)
    for (int h = 0; h < HB; ++h) {
      __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
      for (int64_t k = 0; k < dim; k += 16) {
        lo = _mm512_fmadd_pd(_mm512_loadu_pd(q + h * dim + k), _mm512_loadu_pd(c + j * dim + k), lo);
        hi = _mm512_fmadd_pd(_mm512_loadu_pd(q + h * dim + k + 8), _mm512_loadu_pd(c + j * dim + k + 8), hi);
      }
      z[h * nz + j] = fold(lo, hi);
    }
}

// out[h · dim + d] = bf16(Σ_j pw[h · nz + j] · c_j[d] / lf[h]) for HB heads and the TZ · 8
// dims from d0, entries in list order.
template <int HB, int TZ>
void weighted_sum(const double* pw, int64_t nz, const double* c, int64_t n, int64_t dim, int64_t d0, const float* lf,
                  float* out) {
  __m512d acc[HB * TZ];
  for (int i = 0; i < HB * TZ; ++i) acc[i] = _mm512_setzero_pd();
  for (int64_t j = 0; j < n; ++j) {
    __m512d cv[TZ];
#pragma GCC unroll 4
    for (int t = 0; t < TZ; ++t) cv[t] = _mm512_loadu_pd(c + j * dim + d0 + 8 * t);
#pragma GCC unroll 4
    for (int h = 0; h < HB; ++h) {
      const __m512d w = _mm512_set1_pd(pw[h * nz + j]);
#pragma GCC unroll 4
      for (int t = 0; t < TZ; ++t) acc[h * TZ + t] = _mm512_fmadd_pd(w, cv[t], acc[h * TZ + t]);
    }
  }
  for (int h = 0; h < HB; ++h) {
    alignas(64) double a[8 * TZ];
    for (int t = 0; t < TZ; ++t) _mm512_store_pd(a + 8 * t, acc[h * TZ + t]);
    for (int i = 0; i < 8 * TZ; ++i) out[h * dim + d0 + i] = round_bf16(float(a[i]) / lf[h]);
  }
}

template <int HB>
void weighted_sums(const double* pw, int64_t nz, const double* c, int64_t n, int64_t dim, const float* lf, float* out) {
  int64_t d0 = 0;
  for (; d0 + 32 <= dim; d0 += 32) weighted_sum<HB, 4>(pw, nz, c, n, dim, d0, lf, out);
  for (; d0 < dim; d0 += 8) weighted_sum<HB, 1>(pw, nz, c, n, dim, d0, lf, out);
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
    const int64_t nh = he - hb, nz = std::max<int64_t>(1, n);
    AlignedBuffer<double> qd(static_cast<size_t>(nh * dim)), pw(static_cast<size_t>(nh * nz));
    std::vector<float> z(static_cast<size_t>(nh * nz)), lf(static_cast<size_t>(nh));
    for (int64_t i = 0; i < nh * dim; ++i) qd[size_t(i)] = double(q[hb * dim + i]);
    int64_t h = 0;
    for (; h + 4 <= nh; h += 4) scores<4>(qd.data() + h * dim, c, n, dim, z.data() + h * nz, nz);
    for (; h < nh; ++h) scores<1>(qd.data() + h * dim, c, n, dim, z.data() + h * nz, nz);
    for (h = 0; h < nh; ++h) {
      float* zh = z.data() + h * nz;
      for (int64_t j = 0; j < n; ++j) zh[j] = zh[j] * scale;
      lf[size_t(h)] = sink_softmax(zh, n, sink[hb + h]);
      for (int64_t j = 0; j < n; ++j) pw[size_t(h * nz + j)] = double(round_bf16(zh[j]));
    }
    for (h = 0; h + 4 <= nh; h += 4)
      weighted_sums<4>(pw.data() + h * nz, nz, c, n, dim, lf.data() + h, out + (hb + h) * dim);
    for (; h < nh; ++h) weighted_sums<1>(pw.data() + h * nz, nz, c, n, dim, lf.data() + h, out + (hb + h) * dim);
  });
}

}  // namespace strata::kernels::avx512
