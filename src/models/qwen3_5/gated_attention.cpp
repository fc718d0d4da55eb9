#include "models/qwen3_5/gated_attention.h"

#include <algorithm>
#include <cmath>

#include "core/huge_buffer.h"
#include "core/numfmt.h"
#include "kernels/parallel.h"
#include "models/layers/exact_attention.h"
#include "models/layers/kv_dots.h"
#include "models/layers/offset_rms_norm.h"

namespace strata::qwen35 {

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
      // Scratch kept per thread: at long context z is megabytes, and a fresh allocation each
      // call costs its page faults (slow on these VMs) and its zeroing.
      thread_local std::vector<uint16_t> zb;
      thread_local std::vector<double> acc;
      thread_local std::vector<const uint16_t*> keys, values;
      const int64_t last = s.pos0 + s.rows;
      if (zb.size() < size_t(group * last)) zb.resize(size_t(group * last));
      if (acc.size() < size_t(group * D)) acc.resize(size_t(group * D));
      keys.resize(size_t(last)), values.resize(size_t(last));
      for (int64_t j = 0; j < last; ++j) {
        keys[size_t(j)] = reinterpret_cast<const uint16_t*>(s.layer->kv.entry(j));
        values[size_t(j)] = keys[size_t(j)] + KV * D;
      }
      for (int64_t i = b; i < e; ++i) {
        const int64_t t = i / KV, kvh = i % KV, r = r0 + t, h0 = kvh * group;
        models::attend_group(qg.data() + (r * H + h0) * 2 * D, 2 * D, group, keys.data(), values.data(), kvh * D,
                             s.pos0 + t + 1, D, scale, dots, zb.data(), acc.data(), o.data() + (r * H + h0) * D, D);
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
