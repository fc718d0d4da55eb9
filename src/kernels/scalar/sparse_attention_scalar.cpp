#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/numfmt.h"
#include "kernels/dot.h"
#include "kernels/parallel.h"
#include "kernels/sparse_attention.h"

namespace strata::kernels {

void sparse_attention(const float* q, int64_t heads, int64_t dim, const float* const* entries, int64_t n,
                      const float* sink, float scale, float* out) {
  if (active_isa() == Isa::avx512 && dim % 16 == 0) return avx512::sparse_attention(q, heads, dim, entries, n, sink, scale, out);
  sparse_attention_reference(q, heads, dim, entries, n, sink, scale, out);
}

void sparse_attention_reference(const float* q, int64_t heads, int64_t dim, const float* const* entries, int64_t n,
                                const float* sink, float scale, float* out) {
  const DotFn dotf = dot_fn();
  parallel_for(heads, std::max<int64_t>(1, (int64_t(1) << 18) / std::max<int64_t>(1, n * dim)), [&](int64_t hb, int64_t he) {
    std::vector<float> z(size_t(n > 0 ? n : 1));
    std::vector<double> acc(static_cast<size_t>(dim));
    for (int64_t h = hb; h < he; ++h) {
      const float* qh = q + h * dim;
      for (int64_t j = 0; j < n; ++j) z[size_t(j)] = dotf(qh, entries[j], dim) * scale;
      // o = Σ bf16(p_j)·c_j / l
      const float lf = sink_softmax(z.data(), n, sink[h]);
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t j = 0; j < n; ++j) {
        const double w = round_bf16(z[size_t(j)]);
        const float* c = entries[j];
        for (int64_t d = 0; d < dim; ++d) acc[size_t(d)] += w * double(c[d]);  // exact products, fp64 sum
      }
      for (int64_t d = 0; d < dim; ++d) out[h * dim + d] = round_bf16(float(acc[size_t(d)]) / lf);
    }
  });
}

}  // namespace strata::kernels
