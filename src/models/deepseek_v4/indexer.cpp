#include "models/deepseek_v4/indexer.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
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

void indexer_queries(const IndexerWeights& w, const IndexerSpec& s, const float* qr, int64_t rows, const int64_t* pos,
                     float* q) {
  const int64_t width = s.heads * s.head_dim;
  kernels::linear(w.wq_b, qr, rows, q, true);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < s.heads; ++h) {
      float* qh = q + r * width + h * s.head_dim;
      s.rope->apply(qh + s.head_dim - s.rope_dim, pos[r]);
      kernels::hadamard(qh, s.head_dim);
      kernels::fake_quant_fp4(qh, s.head_dim, 32);
    }
}

void indexer_weights(const IndexerWeights& w, const IndexerSpec& s, const float* x, int64_t rows, float* out) {
  kernels::linear(w.weights_proj, x, rows, out, true);
  const float scale = float(std::pow(double(s.head_dim), -0.5) * std::pow(double(s.heads), -0.5));
  for (int64_t i = 0; i < rows * s.heads; ++i) out[i] = round_bf16(out[i] * scale);
}

const float* indexer_scores(const IndexerSpec& s, const float* q, const float* weights, const CompressorState& keys,
                            int64_t n_visible, const IndexerScratch& scratch) {
  constexpr int64_t kChunk = IndexerScratch::kChunk;
  if (n_visible > scratch.max_visible() || scratch.heads() != s.heads || scratch.head_dim() != s.head_dim)
    throw Error("indexer: the scratch holds " + std::to_string(scratch.max_visible()) + " keys of " +
                std::to_string(scratch.heads()) + " heads, the query needs " + std::to_string(n_visible) + " of " +
                std::to_string(s.heads));
  float* score = scratch.scores();
  // Integer dot products straight from the stored codes (kernels/index_dot.h), the same bits
  // as the product below, without unpacking the keys to fp32: the keys split once into the
  // scratch's parts (one per thread; a split per chunk cost a wake-up and a wait 16 times per
  // step at 128K tokens), each part scoring its range kChunk keys at a time in its own
  // products and key addresses.
  thread_local kernels::IndexQueriesFp4 qi;  // heads × head_dim bytes: bounded, not the context's
  if (keys.codec.kind != EntryCodec::Kind::kv && kernels::prepare_index_queries_fp4(q, s.heads, s.head_dim, qi)) {
    const auto codes =
        keys.codec.kind == EntryCodec::Kind::index_fp4 ? kernels::IndexKeyCodes::fp4 : kernels::IndexKeyCodes::fp8;
    const kernels::IndexQueriesFp4& qr = qi;  // (inside the job, `qi` would name the worker's own)
    const int64_t groups = (n_visible + 15) / 16;
    // a part per thread, but at least 4 groups of 16 keys each (below that a hand-off costs more)
    const int64_t parts = std::clamp<int64_t>(groups / 4, 1, scratch.parts());
    const int64_t per = (groups + parts - 1) / parts;
    kernels::parallel_for(parts, 1, [&](int64_t pb, int64_t pe) {
      for (int64_t part = pb; part < pe; ++part) {
        float* zt = scratch.products(part);
        const uint8_t** ptrs = scratch.keys(part);
        const int64_t end = std::min(n_visible, (part + 1) * per * 16);
        for (int64_t t0 = part * per * 16; t0 < end; t0 += kChunk) {
          const int64_t nt = std::min(kChunk, end - t0);
          for (int64_t t = 0; t < nt; ++t) ptrs[t] = keys.entry(t0 + t);
          kernels::index_dots(qr, codes, ptrs, nt, zt, kChunk);
          kernels::index_score(zt, s.heads, nt, kChunk, weights, score + t0);
        }
      }
    });
    return score;
  }
  // z[h][t] = q_h · k_t for a chunk of keys at a time, as one product with the keys in the
  // weight role (kernels::linear_exact: each element is the canonical dot, the same bits as
  // dot(q_h, k_t) and as the integer route above, in every numerics profile: these are attention
  // scores, not weight products); the chunk's keys are unpacked from their storage format first
  // (exact: the stored values).
  float* z = scratch.products(0);
  float* kd = scratch.unpacked();
  for (int64_t t0 = 0; t0 < n_visible; t0 += kChunk) {
    const int64_t nt = std::min(kChunk, n_visible - t0);
    // Unpacking and the head reduction are per key, so splitting them over threads changes no bit.
    kernels::parallel_for(nt, 256, [&](int64_t tb, int64_t te) {
      for (int64_t t = tb; t < te; ++t) keys.entry_values(t0 + t, kd + t * s.head_dim);
    });
    const kernels::LinearWeight kw{kernels::WeightFormat::f32, kd, nullptr, nt, s.head_dim};
    kernels::linear_exact(kw, q, s.heads, z, false);
    kernels::parallel_for(nt, 256, [&](int64_t tb, int64_t te) {
      kernels::index_score(z + tb, s.heads, te - tb, nt, weights, score + t0 + tb);
    });
  }
  return score;
}

namespace {
// A standalone state's scratch: one per thread, grown (doubling) to the longest query seen, so
// decoding does not allocate and fault in fresh pages per call.
const IndexerScratch& own_scratch(const IndexerSpec& s, int64_t n_visible) {
  thread_local IndexerScratch own;
  const int64_t parts = kernels::num_threads();
  if (own.empty() || own.max_visible() < n_visible || own.parts() != parts || own.heads() != s.heads ||
      own.head_dim() != s.head_dim)
    own = IndexerScratch(s.heads, s.head_dim, std::max<int64_t>({n_visible, 2 * own.max_visible(), 1024}), parts);
  return own;
}
}  // namespace

std::vector<float> indexer_scores(const IndexerSpec& s, const float* q, const float* weights,
                                  const CompressorState& keys, int64_t n_visible) {
  const float* score = indexer_scores(s, q, weights, keys, n_visible, own_scratch(s, n_visible));
  return std::vector<float>(score, score + n_visible);
}

std::vector<int64_t> indexer_select(const IndexerSpec& s, const float* q, const float* weights,
                                    const CompressorState& keys, int64_t n_visible, const IndexerScratch* scratch) {
  const float* score = indexer_scores(s, q, weights, keys, n_visible, scratch ? *scratch : own_scratch(s, n_visible));
  return kernels::topk(score, n_visible, std::min(s.topk, n_visible));
}

}  // namespace strata::dsv4
