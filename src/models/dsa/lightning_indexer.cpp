#include "models/dsa/lightning_indexer.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>

#include "core/numfmt.h"
#include "kernels/hadamard.h"
#include "kernels/linear.h"
#include "kernels/linear_profile.h"
#include "kernels/parallel.h"
#include "kernels/topk.h"
#include "models/dsa/cache_entries.h"
#include "models/dsa/index_scan.h"

namespace strata::dsa {

void layer_norm(const float* x, const float* w, const float* b, int64_t n, float eps, float* y) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += double(x[i]);
  const float mean = float(s) / float(n);
  double v = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = double(x[i] - mean);
    v += d * d;
  }
  const float var = float(v) / float(n);
  const float r = float(1.0 / std::sqrt(double(var + eps)));
  for (int64_t i = 0; i < n; ++i) {
    float t = (x[i] - mean) * r;
    t = t * w[i];
    t = t + b[i];
    y[i] = round_bf16(t);
  }
}

void indexer_rope(float* x, int64_t rope, bool interleaved, const kernels::RopeTable& table, int64_t pos) {
  float cs[256], sn[256];
  table.angles(pos, cs, sn);
  const int64_t half = rope / 2;
  if (interleaved) return kernels::rope_rotate(x, cs, sn, half, false);
  for (int64_t i = 0; i < half; ++i) {
    const float a = x[i], b = x[i + half];
    const float ac = a * cs[i], bs = b * sn[i], as = a * sn[i], bc = b * cs[i];
    x[i] = round_bf16(ac - bs);
    x[i + half] = round_bf16(as + bc);
  }
}

void indexer_keys(const Config& c, const IndexerWeights& w, const kernels::RopeTable& rope, const float* x,
                  int64_t rows, const int64_t* pos, float* keys) {
  const int64_t D = c.index_head_dim;
  std::vector<float> k(static_cast<size_t>(rows * D));
  kernels::linear(w.wk, x, rows, k.data(), true);
  for (int64_t r = 0; r < rows; ++r) {
    float* kr = keys + r * D;
    layer_norm(k.data() + r * D, w.k_norm_weight.data(), w.k_norm_bias.data(), D, 1e-6f, kr);
    indexer_rope(kr, c.qk_rope_head_dim, c.indexer_rope_interleave, rope, pos[r]);
  }
}

void index_key_entry(const float* key, int64_t dim, uint8_t* entry) {
  float k[128];
  std::memcpy(k, key, size_t(dim) * 4);
  kernels::hadamard(k, dim, true);
  encode_index_key(k, dim, entry);
}

IndexerQuery indexer_query(float* q, const float* wp, int64_t heads, int64_t dim, int64_t rope_dim, bool interleaved,
                           const kernels::RopeTable& rope, int64_t pos) {
  const float head_scale = float(std::pow(double(heads), -0.5));
  const float dim_scale = float(std::pow(double(dim), -0.5));
  IndexerQuery o;
  o.heads = (heads + 7) / 8 * 8;
  o.qT.assign(static_cast<size_t>(dim * o.heads), 0.0);
  o.w.assign(static_cast<size_t>(o.heads), 0.0f);
  const int64_t stride = index_pair_stride(o.heads);
  o.pairs.assign(static_cast<size_t>(dim / 2 * stride), 0u);
  for (int64_t j = 0; j < heads; ++j) {
    float* qh = q + j * dim;
    indexer_rope(qh, rope_dim, interleaved, rope, pos);
    kernels::hadamard(qh, dim, true);
    uint8_t codes[128];
    float scale, v[128];
    fp8_encode(qh, dim, codes, &scale);
    fp8_codes_to_f32(codes, dim, v);
    for (int64_t i = 0; i < dim; ++i) o.qT[size_t(i * o.heads + j)] = double(v[i]);
    for (int64_t p = 0; p < dim / 2; ++p)  // e4m3 values are bf16 values: their top halves
      o.pairs[size_t(p * stride + j)] =
          (std::bit_cast<uint32_t>(v[2 * p]) >> 16) | (std::bit_cast<uint32_t>(v[2 * p + 1]) & 0xFFFF0000u);
    const float wj = round_bf16(wp[j] * head_scale);
    o.w[size_t(j)] = (wj * scale) * dim_scale;
  }
  return o;
}

std::vector<IndexerQuery> indexer_queries(const Config& c, const IndexerWeights& w, const kernels::RopeTable& rope,
                                          const float* qr, const float* x, int64_t rows, const int64_t* pos) {
  const int64_t H = c.index_n_heads, D = c.index_head_dim;
  std::vector<float> q(static_cast<size_t>(rows * H * D)), wp(static_cast<size_t>(rows * H));
  kernels::linear(w.wq_b, qr, rows, q.data(), true);
  kernels::linear(w.weights_proj, x, rows, wp.data(), true);
  std::vector<IndexerQuery> out;
  for (int64_t r = 0; r < rows; ++r)
    out.push_back(indexer_query(q.data() + r * H * D, wp.data() + r * H, H, D, c.qk_rope_head_dim,
                                c.indexer_rope_interleave, rope, pos[r]));
  return out;
}

std::vector<float> indexer_scores(const IndexerQuery& q, const cache::EntryArray& keys, int64_t first, int64_t n) {
  std::vector<float> score(static_cast<size_t>(n - first));
  const IndexScanFn scan = index_scan_fn();
  const ScanQuery sq = q.scan_query();
  const bool timed = kernels::linear_profile_on();
  const auto t0 = std::chrono::steady_clock::now();
  kernels::parallel_for(n - first, 256, [&](int64_t a, int64_t b) {
    scan(sq, keys, first + a, first + b, score.data() + a);
  });
  if (timed)
    kernels::region_profile_record(
        "indexer scan", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return score;
}

std::vector<int32_t> indexer_select(const IndexerQuery& q, const cache::EntryArray& keys, int64_t first, int64_t n,
                                    int64_t topk) {
  std::vector<int32_t> sel;
  if (n - first <= topk) {  // every key: the scores cannot change the set
    for (int64_t s = first; s < n; ++s) sel.push_back(int32_t(s));
    return sel;
  }
  const std::vector<float> score = indexer_scores(q, keys, first, n);
  for (int64_t s : kernels::topk(score.data(), n - first, topk)) sel.push_back(int32_t(first + s));
  std::sort(sel.begin(), sel.end());
  return sel;
}

}  // namespace strata::dsa
