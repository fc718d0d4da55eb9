#include "models/dsa/mla.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/huge_buffer.h"
#include "core/numfmt.h"
#include "kernels/linear.h"
#include "kernels/parallel.h"
#include "kernels/rmsnorm.h"
#include "models/dsa/cache_entries.h"
#include "models/dsa/lightning_indexer.h"
#include "models/layers/kv_dots.h"

namespace strata::dsa {

using std::vector;

void rms_norm(const float* x, const float* w, int64_t n, float eps, float* y) {
  const float r = kernels::rms_scale(x, n, eps);
  for (int64_t i = 0; i < n; ++i) y[i] = round_bf16(w[i] * (x[i] * r));
}

namespace {

// One row's attention over its selected keys (entries decoded to bf16, [k][kv_lora + rope]):
// q_lat [H][kv_lora], q_pe [H][rope] (bf16 values) → o_lat [H][kv_lora], bf16 values. The dots
// are the canonical fp64 sums (models/layers/kv_dots.h), the values summed in key order.
void attend(const Config& c, const float* q_lat, const float* q_pe, const uint16_t* const* keys, int64_t k, float scale,
            float* o_lat) {
  const int64_t H = c.num_attention_heads, L = c.kv_lora_rank, R = c.qk_rope_head_dim;
  const models::KvDots kd = models::kv_dots();
  kernels::parallel_for(H, 1, [&](int64_t h0, int64_t h1) {
    const int64_t G = h1 - h0;
    vector<double> ql(static_cast<size_t>(G * L)), qp(static_cast<size_t>(G * R)), a(static_cast<size_t>(G)),
        b(static_cast<size_t>(G));
    for (int64_t i = 0; i < G * L; ++i) ql[size_t(i)] = double(q_lat[h0 * L + i]);
    for (int64_t i = 0; i < G * R; ++i) qp[size_t(i)] = double(q_pe[h0 * R + i]);
    vector<float> z(static_cast<size_t>(k * G));  // [key][head]
    vector<float> m(static_cast<size_t>(G), -std::numeric_limits<float>::infinity());
    for (int64_t s = 0; s < k; ++s) {
      kd.dots(ql.data(), L, G, keys[s], L, a.data());
      kd.dots(qp.data(), R, G, keys[s] + L, R, b.data());
      for (int64_t g = 0; g < G; ++g) {
        const float zz = (float(a[size_t(g)]) + float(b[size_t(g)])) * scale;
        z[size_t(s * G + g)] = zz;
        m[size_t(g)] = std::max(m[size_t(g)], zz);
      }
    }
    // P = bf16(exp(z - m) / Σ) per head, fp64 inside and one rounding (the reference's softmax).
    vector<double> e(static_cast<size_t>(k * G)), sum(static_cast<size_t>(G), 0.0);
    for (int64_t s = 0; s < k; ++s)
      for (int64_t g = 0; g < G; ++g)
        sum[size_t(g)] += (e[size_t(s * G + g)] = std::exp(double(z[size_t(s * G + g)]) - double(m[size_t(g)])));
    for (int64_t s = 0; s < k; ++s)
      for (int64_t g = 0; g < G; ++g)
        e[size_t(s * G + g)] = double(round_bf16(float(e[size_t(s * G + g)] / sum[size_t(g)])));
    vector<double> acc(static_cast<size_t>(G * L), 0.0);
    constexpr int64_t kBlock = 16;
    for (int64_t s0 = 0; s0 < k; s0 += kBlock)
      kd.accumulate(acc.data(), G, e.data() + s0 * G, keys + s0, std::min(kBlock, k - s0), L);
    for (int64_t i = 0; i < G * L; ++i) o_lat[h0 * L + i] = round_bf16(float(acc[size_t(i)]));
  });
}

}  // namespace

void mla_forward(const Config& c, const MlaWeights& w, const kernels::RopeTable& rope, const vector<Segment>& segs,
                 const float* x, int64_t n, vector<vector<int32_t>>& selection, float* out) {
  const int64_t H = c.num_attention_heads, Q = c.q_lora_rank, L = c.kv_lora_rank;
  const int64_t R = c.qk_rope_head_dim, N = c.qk_nope_head_dim, V = c.v_head_dim, QK = c.qk_head_dim();
  const float eps = float(c.rms_norm_eps);
  vector<int64_t> pos(static_cast<size_t>(n));
  {
    int64_t r = 0;
    for (const auto& s : segs)
      for (int64_t t = 0; t < s.rows; ++t) pos[size_t(r++)] = s.pos0 + t;
  }
  // Projections over every row at once, into working rows in huge-page memory, uninitialized
  // (every element is written): at 256 rows the absorbed queries and outputs are 67 MB each,
  // whose 4 KB faults cost more than their math.
  CallBuffer<float> qa(static_cast<size_t>(n * Q)), qr(static_cast<size_t>(n * Q)), q(static_cast<size_t>(n * H * QK)),
      kv(static_cast<size_t>(n * (L + R)));
  kernels::linear(w.q_a, x, n, qa.data(), true);
  for (int64_t r = 0; r < n; ++r) rms_norm(qa.data() + r * Q, w.q_a_norm.data(), Q, eps, qr.data() + r * Q);
  kernels::linear(w.q_b, qr.data(), n, q.data(), true);
  kernels::linear(w.kv_a, x, n, kv.data(), true);
  CallBuffer<float> latent(static_cast<size_t>(n * L)), k_pe(static_cast<size_t>(n * R)),
      q_pe(static_cast<size_t>(n * H * R));
  float cs[256], sn[256];
  for (int64_t r = 0; r < n; ++r) {
    rms_norm(kv.data() + r * (L + R), w.kv_a_norm.data(), L, eps, latent.data() + r * L);
    rope.angles(pos[size_t(r)], cs, sn);
    for (int64_t i = 0; i < R; ++i) k_pe[size_t(r * R + i)] = kv[size_t(r * (L + R) + L + i)];
    kernels::rope_rotate(k_pe.data() + r * R, cs, sn, R / 2, false);
    for (int64_t h = 0; h < H; ++h) {
      float* qp = q_pe.data() + (r * H + h) * R;
      for (int64_t i = 0; i < R; ++i) qp[i] = q[size_t((r * H + h) * QK + N + i)];
      kernels::rope_rotate(qp, cs, sn, R / 2, false);
    }
  }
  // q_lat[h] = bf16(q_nope[h] · W_UK[h]) for every row; heads split over the threads (each
  // product small: split further, its hand-offs would cost more than its arithmetic).
  CallBuffer<float> q_lat(static_cast<size_t>(n * H * L));
  kernels::parallel_for(H, 1, [&](int64_t h0, int64_t h1) {
    vector<float> qn(static_cast<size_t>(n * N)), ql(static_cast<size_t>(n * L));
    for (int64_t h = h0; h < h1; ++h) {
      for (int64_t r = 0; r < n; ++r) std::copy_n(q.data() + (r * H + h) * QK, N, qn.data() + r * N);
      kernels::linear(w.uk_t[size_t(h)], qn.data(), n, ql.data(), true);
      for (int64_t r = 0; r < n; ++r) std::copy_n(ql.data() + r * L, L, q_lat.data() + (r * H + h) * L);
    }
  });
  // The indexer's keys and queries.
  vector<float> ikeys;
  vector<IndexerQuery> iq;
  if (w.has_indexer) {
    ikeys.resize(static_cast<size_t>(n * c.index_head_dim));
    indexer_keys(c, w.indexer, rope, x, n, pos.data(), ikeys.data());
    iq = indexer_queries(c, w.indexer, rope, qr.data(), x, n, pos.data());
  }
  // Per segment: append its entries, then each row attends to its selection.
  selection.resize(static_cast<size_t>(n));
  const float scale = float(c.softmax_scale());
  CallBuffer<float> o_lat(static_cast<size_t>(n * H * L));
  int64_t row = 0;
  for (const auto& s : segs) {
    LayerState& st = *s.layer;
    if (int64_t(st.latent.size()) != s.pos0) throw Error("mla: the layer's cache does not end at the segment's position");
    const int64_t first = st.fillers(s.pos0, L);  // keys before it are an MTP restart's fillers
    for (int64_t t = 0; t < s.rows; ++t) {
      const int64_t r = row + t;
      if (s.undo) s.undo->save_size(s.pos0 + t, st.latent);
      encode_latent(latent.data() + r * L, L, k_pe.data() + r * R, R, st.latent.append());
      if (w.has_indexer) {
        if (s.undo) s.undo->save_size(s.pos0 + t, st.index_keys);
        index_key_entry(ikeys.data() + r * c.index_head_dim, c.index_head_dim, st.index_keys.append());
      }
    }
    // The keys as bf16 rows: a prefill decodes each visible key once for all its rows; a decode
    // step only the keys it selects.
    const int64_t W = L + R, end = s.pos0 + s.rows;
    vector<uint16_t> decoded;
    vector<const uint16_t*> ptr;
    const bool all_keys = s.rows > 1;
    if (all_keys) {
      decoded.resize(static_cast<size_t>((end - first) * W));
      kernels::parallel_for(end - first, 64, [&](int64_t a, int64_t b) {
        for (int64_t j = a; j < b; ++j) decode_latent_bf16(st.latent.entry(first + j), L, R, decoded.data() + j * W);
      });
    }
    for (int64_t t = 0; t < s.rows; ++t) {
      const int64_t r = row + t, visible = s.pos0 + t + 1;
      auto& sel = selection[size_t(r)];
      if (w.has_indexer)
        sel = indexer_select(iq[size_t(r)], st.index_keys, first, visible, c.index_topk);
      else if (sel.empty() || sel.back() >= visible || sel.front() < first)
        throw Error("mla: a shared-indexer layer has no selection from an earlier layer");
      const int64_t k = int64_t(sel.size());
      ptr.resize(static_cast<size_t>(k));
      if (all_keys) {
        for (int64_t j = 0; j < k; ++j) ptr[size_t(j)] = decoded.data() + (sel[size_t(j)] - first) * W;
      } else {
        decoded.resize(static_cast<size_t>(k * W));
        kernels::parallel_for(k, 64, [&](int64_t a, int64_t b) {
          for (int64_t j = a; j < b; ++j) decode_latent_bf16(st.latent.entry(sel[size_t(j)]), L, R, decoded.data() + j * W);
        });
        for (int64_t j = 0; j < k; ++j) ptr[size_t(j)] = decoded.data() + j * W;
      }
      attend(c, q_lat.data() + r * H * L, q_pe.data() + r * H * R, ptr.data(), k, scale, o_lat.data() + r * H * L);
    }
    row += s.rows;
  }
  // o[h] = bf16(o_lat[h] · W_UVᵀ), heads split over the threads, then o_proj.
  CallBuffer<float> o(static_cast<size_t>(n * H * V));
  kernels::parallel_for(H, 1, [&](int64_t h0, int64_t h1) {
    vector<float> ol(static_cast<size_t>(n * L)), oh(static_cast<size_t>(n * V));
    for (int64_t h = h0; h < h1; ++h) {
      for (int64_t r = 0; r < n; ++r) std::copy_n(o_lat.data() + (r * H + h) * L, L, ol.data() + r * L);
      kernels::linear(w.uv[size_t(h)], ol.data(), n, oh.data(), true);
      for (int64_t r = 0; r < n; ++r) std::copy_n(oh.data() + r * V, V, o.data() + (r * H + h) * V);
    }
  });
  kernels::linear(w.o, o.data(), n, out, true);
}

}  // namespace strata::dsa
