// Attention of H query heads over one list of shared key=value entries (DeepSeek-V4's shared
// KV MQA): z_j = (q_h · c_j) · scale, weights exp(z_j - m) / (Σ_k exp(z_k - m) + exp(sink_h - m)),
// o_h = Σ_j w_j c_j. The sink enters the denominator only. Entries are summed in list order;
// the caller fixes that order (window oldest→newest, then compressed entries).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace strata::kernels {

// One head's softmax statistics, shared by every version so they cannot drift apart: z[0..n)
// holds the scaled scores; it becomes p_j = exp(z_j - m) (fp64, rounded once), m = max z, and
// the result is l = Σ p_j + exp(sink - m), the denominator, rounded to fp32.
inline float sink_softmax(float* z, int64_t n, float sink) {
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < n; ++j) m = std::max(m, z[j]);
  double l = 0.0;
  for (int64_t j = 0; j < n; ++j) {
    z[j] = float(std::exp(double(z[j] - m)));
    l += double(z[j]);
  }
  l += double(float(std::exp(double(sink - m))));
  return float(l);
}

// q: [heads, dim]; entries: n pointers to dim floats; sink: [heads]; out: [heads, dim],
// rounded to bf16 (the reference returns q's dtype). n may be 0 (output is then 0).
void sparse_attention(const float* q, int64_t heads, int64_t dim, const float* const* entries, int64_t n,
                      const float* sink, float scale, float* out);
// The scalar reference, and the AVX-512 version (dim % 16 == 0, bit-identical) that
// sparse_attention dispatches to when AVX-512 is active.
void sparse_attention_reference(const float* q, int64_t heads, int64_t dim, const float* const* entries, int64_t n,
                                const float* sink, float scale, float* out);
namespace avx512 {
void sparse_attention(const float* q, int64_t heads, int64_t dim, const float* const* entries, int64_t n,
                      const float* sink, float scale, float* out);
}

}  // namespace strata::kernels
