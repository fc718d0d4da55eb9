#include "models/qwen3_5/gated_attention.h"

#include <algorithm>
#include <cmath>

#include "core/huge_buffer.h"
#include "core/numfmt.h"
#include "kernels/parallel.h"
#include "models/layers/kv_dots.h"
#include "models/layers/offset_rms_norm.h"

namespace strata::qwen35 {

namespace {

// The query heads q[0..G) (stride qs) that share one KV head, over `visible` keys of the cache,
// reading each key and value once for the group: o[g] (stride os) in bf16 values. z: [G][visible],
// acc: [G][D] scratch.
void attend_group(const float* q, int64_t qs, int64_t G, const cache::EntryArray& kv, int64_t kv_head,
                  int64_t kv_heads, int64_t D, int64_t visible, float scale, const models::KvDots& dots, double* z,
                  double* acc, float* o, int64_t os) {
  std::vector<double> mx(static_cast<size_t>(G), -INFINITY), sum(static_cast<size_t>(G), 0.0);
  for (int64_t j = 0; j < visible; ++j) {
    const auto* kj = reinterpret_cast<const uint16_t*>(kv.entry(j)) + kv_head * D;
    for (int64_t g = 0; g < G; ++g) {
      const double zj = round_bf16(round_bf16(float(dots.dot(q + g * qs, kj, D))) * scale);
      z[g * visible + j] = zj;
      mx[size_t(g)] = std::max(mx[size_t(g)], zj);
    }
  }
  for (int64_t g = 0; g < G; ++g)
    for (int64_t j = 0; j < visible; ++j) sum[size_t(g)] += (z[g * visible + j] = std::exp(z[g * visible + j] - mx[size_t(g)]));
  std::fill(acc, acc + G * D, 0.0);
  for (int64_t j = 0; j < visible; ++j) {
    const auto* vj = reinterpret_cast<const uint16_t*>(kv.entry(j)) + (kv_heads + kv_head) * D;
    for (int64_t g = 0; g < G; ++g)
      dots.accumulate(acc + g * D, double(round_bf16(float(z[g * visible + j] / sum[size_t(g)]))), vj, D);
  }
  for (int64_t g = 0; g < G; ++g)
    for (int64_t i = 0; i < D; ++i) o[g * os + i] = round_bf16(float(acc[g * D + i]));
}

}  // namespace

void gated_attention(const Config& c, const AttentionWeights& w, const models::RotateHalfRope& rope,
                     const std::vector<Segment>& segs, const float* x, int64_t n, float* out) {
  const int64_t H = c.num_attention_heads, KV = c.num_key_value_heads, D = c.head_dim, group = H / KV;
  const float eps = float(c.rms_norm_eps);
  const float scale = float(std::pow(double(D), -0.5));
  CallBuffer<float> qg(size_t(n * 2 * H * D)), k(size_t(n * KV * D)), v(size_t(n * KV * D)), o(size_t(n * H * D));
  kernels::linear(w.q, x, n, qg.data(), true);
  kernels::linear(w.k, x, n, k.data(), true);
  kernels::linear(w.v, x, n, v.data(), true);
  const int64_t half = rope.rotary_dim() / 2;
  std::vector<float> cs(static_cast<size_t>(half)), sn(static_cast<size_t>(half));
  // Norms and RoPE in place (q in the first half of each head's [q | gate]); K and V appended.
  int64_t row = 0;
  for (const Segment& s : segs) {
    for (int64_t t = 0; t < s.rows; ++t, ++row) {
      const int64_t pos = s.pos0 + t;
      rope.cos_sin(pos, cs.data(), sn.data());
      for (int64_t h = 0; h < H; ++h) {
        float* qh = qg.data() + (row * H + h) * 2 * D;
        models::offset_rms_norm(qh, w.q_norm, D, eps, qh);
        rope.apply(qh, cs.data(), sn.data());
      }
      for (int64_t h = 0; h < KV; ++h) {
        float* kh = k.data() + (row * KV + h) * D;
        models::offset_rms_norm(kh, w.k_norm, D, eps, kh);
        rope.apply(kh, cs.data(), sn.data());
      }
      cache::save_before_append(s.undo, pos, s.layer->kv);
      auto* e = reinterpret_cast<uint16_t*>(s.layer->kv.append());
      for (int64_t i = 0; i < KV * D; ++i) {
        e[i] = f32_to_bf16(k[size_t(row * KV * D + i)]);
        e[KV * D + i] = f32_to_bf16(v[size_t(row * KV * D + i)]);
      }
    }
  }
  // Each (row, KV head) attends with its group of query heads on its own: split over the
  // threads, the same bits on any count.
  const models::KvDots dots = models::kv_dots();
  row = 0;
  for (const Segment& s : segs) {
    const int64_t r0 = row;
    kernels::parallel_for(s.rows * KV, 1, [&](int64_t b, int64_t e) {
      std::vector<double> z(static_cast<size_t>(group * (s.pos0 + s.rows))), acc(static_cast<size_t>(group * D));
      for (int64_t i = b; i < e; ++i) {
        const int64_t t = i / KV, kvh = i % KV, r = r0 + t, h0 = kvh * group;
        attend_group(qg.data() + (r * H + h0) * 2 * D, 2 * D, group, s.layer->kv, kvh, KV, D, s.pos0 + t + 1, scale,
                     dots, z.data(), acc.data(), o.data() + (r * H + h0) * D, D);
      }
    });
    row += s.rows;
  }
  // The output gate: o · bf16(sigmoid(gate)), gate the second half of each head's q_proj output.
  for (int64_t r = 0; r < n; ++r)
    for (int64_t h = 0; h < H; ++h) {
      const float* gate = qg.data() + (r * H + h) * 2 * D + D;
      float* oh = o.data() + (r * H + h) * D;
      for (int64_t i = 0; i < D; ++i)
        oh[i] = round_bf16(oh[i] * round_bf16(float(1.0 / (1.0 + std::exp(-double(gate[i]))))));
    }
  kernels::linear(w.o, o.data(), n, out, true);
}

}  // namespace strata::qwen35
