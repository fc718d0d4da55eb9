#include "models/deepseek_v4/indexer.h"

#include <algorithm>
#include <cmath>

#include "core/numfmt.h"
#include "kernels/dot.h"
#include "kernels/hadamard.h"
#include "kernels/quant.h"
#include "kernels/topk.h"

namespace strata::dsv4 {

void indexer_queries(const IndexerWeights& w, const IndexerSpec& s, const float* qr, int64_t rows, int64_t pos0,
                     float* q) {
  const int64_t width = s.heads * s.head_dim;
  kernels::linear(w.wq_b, qr, rows, q, true);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < s.heads; ++h) {
      float* qh = q + r * width + h * s.head_dim;
      s.rope->apply(qh + s.head_dim - s.rope_dim, pos0 + r);
      kernels::hadamard(qh, s.head_dim);
      kernels::fake_quant_fp4(qh, s.head_dim, 32);
    }
}

void indexer_weights(const IndexerWeights& w, const IndexerSpec& s, const float* x, int64_t rows, float* out) {
  kernels::linear(w.weights_proj, x, rows, out, true);
  const float scale = float(std::pow(double(s.head_dim), -0.5) * std::pow(double(s.heads), -0.5));
  for (int64_t i = 0; i < rows * s.heads; ++i) out[i] = round_bf16(out[i] * scale);
}

std::vector<float> indexer_scores(const IndexerSpec& s, const float* q, const float* weights,
                                  const CompressorState& keys, int64_t n_visible) {
  std::vector<float> score(static_cast<size_t>(n_visible));
  for (int64_t t = 0; t < n_visible; ++t) {
    const float* k = keys.entry(t);
    float acc = 0.0f;
    for (int64_t h = 0; h < s.heads; ++h) {
      float z = round_bf16(kernels::dot(q + h * s.head_dim, k, s.head_dim));
      acc += round_bf16(std::max(z, 0.0f) * weights[h]);
    }
    score[size_t(t)] = round_bf16(acc);
  }
  return score;
}

std::vector<int64_t> indexer_select(const IndexerSpec& s, const float* q, const float* weights,
                                    const CompressorState& keys, int64_t n_visible) {
  std::vector<float> score = indexer_scores(s, q, weights, keys, n_visible);
  return kernels::topk(score.data(), n_visible, std::min(s.topk, n_visible));
}

}  // namespace strata::dsv4
