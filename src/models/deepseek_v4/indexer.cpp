#include "models/deepseek_v4/indexer.h"

#include <algorithm>
#include <cmath>

#include "core/numfmt.h"
#include "kernels/dot.h"
#include "kernels/hadamard.h"
#include "kernels/index_dot.h"
#include "kernels/index_score.h"
#include "kernels/linear.h"
#include "kernels/parallel.h"
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
  // z[h][t] = q_h · k_t for a chunk of keys at a time, as one product with the keys in the
  // weight role (kernels::linear: each element is the canonical dot, the same bits as
  // dot(q_h, k_t)); the chunk bounds the scratch at heads × kChunk floats whatever the context.
  constexpr int64_t kChunk = 2048;
  // Integer dot products straight from the stored codes (kernels/index_dot.h), the same bits
  // as the product below, without unpacking the keys to fp32: one split of all the keys over
  // the threads (a split per chunk cost a wake-up and a wait 16 times per step at 128K tokens),
  // each thread scoring its range kChunk keys at a time in its own scratch.
  thread_local kernels::IndexQueriesFp4 qi;
  if (keys.codec.kind != EntryCodec::Kind::kv && kernels::prepare_index_queries_fp4(q, s.heads, s.head_dim, qi)) {
    const auto codes = keys.codec.kind == EntryCodec::Kind::index_fp4 ? kernels::IndexKeyCodes::fp4 : kernels::IndexKeyCodes::fp8;
    const kernels::IndexQueriesFp4& qr = qi;  // (inside the job, `qi` would name the worker's own)
    kernels::parallel_for((n_visible + 15) / 16, 4, [&](int64_t gb, int64_t ge) {
      thread_local std::vector<float> zt;
      thread_local std::vector<const uint8_t*> ptrs;
      zt.resize(size_t(s.heads * kChunk));
      ptrs.resize(size_t(kChunk));
      for (int64_t t0 = gb * 16; t0 < std::min(n_visible, ge * 16); t0 += kChunk) {
        const int64_t nt = std::min({kChunk, n_visible - t0, ge * 16 - t0});
        for (int64_t t = 0; t < nt; ++t) ptrs[size_t(t)] = keys.entry(t0 + t);
        kernels::index_dots(qr, codes, ptrs.data(), nt, zt.data(), kChunk);
        kernels::index_score(zt.data(), s.heads, nt, kChunk, weights, score.data() + t0);
      }
    });
    return score;
  }
  // The chunk's keys are unpacked from their storage format first (exact: the stored values).
  const int64_t chunk = std::min(kChunk, std::max<int64_t>(1, n_visible));
  std::vector<float> z(static_cast<size_t>(s.heads * chunk));
  thread_local std::vector<float> kf;  // reused: fresh pages per call are slow to fault in
  if (kf.size() < size_t(chunk * s.head_dim)) kf.resize(size_t(chunk * s.head_dim));
  for (int64_t t0 = 0; t0 < n_visible; t0 += kChunk) {
    const int64_t nt = std::min(kChunk, n_visible - t0);
    // Unpacking and the head reduction are per key, so splitting them over threads changes no bit.
    // (through a pointer: inside the job, `kf` would name the worker's own thread_local)
    float* kd = kf.data();
    kernels::parallel_for(nt, 256, [&](int64_t tb, int64_t te) {
      for (int64_t t = tb; t < te; ++t) keys.entry_values(t0 + t, kd + t * s.head_dim);
    });
    const kernels::LinearWeight kw{kernels::WeightFormat::f32, kf.data(), nullptr, nt, s.head_dim};
    kernels::linear(kw, q, s.heads, z.data(), false);
    kernels::parallel_for(nt, 256, [&](int64_t tb, int64_t te) {
      kernels::index_score(z.data() + tb, s.heads, te - tb, nt, weights, score.data() + t0 + tb);
    });
  }
  return score;
}

std::vector<int64_t> indexer_select(const IndexerSpec& s, const float* q, const float* weights,
                                    const CompressorState& keys, int64_t n_visible) {
  std::vector<float> score = indexer_scores(s, q, weights, keys, n_visible);
  return kernels::topk(score.data(), n_visible, std::min(s.topk, n_visible));
}

}  // namespace strata::dsv4
