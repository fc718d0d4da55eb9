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

// A function of a bf16 value remembered for the values seen since the last clear: attention
// scores are bf16 values, so a head's exp(z − max) and its weights repeat across the keys
// (a few thousand distinct scores over 128K keys). Stamps make a clear O(1).
class Bf16Memo {
 public:
  Bf16Memo() : val_(65536), stamp_(65536, 0) {}
  void clear() {
    if (++gen_ == 0) std::fill(stamp_.begin(), stamp_.end(), 0u), gen_ = 1;
  }
  template <class F>
  double get(uint16_t key, F&& f) {
    if (stamp_[key] != gen_) val_[key] = f(), stamp_[key] = gen_;
    return val_[key];
  }

 private:
  std::vector<double> val_;
  std::vector<uint32_t> stamp_;
  uint32_t gen_ = 0;
};

// The query heads q[0..G) (stride qs) that share one KV head, over `visible` keys of the cache,
// reading each key and value once for the group: o[g] (stride os) in bf16 values. zb: [G][visible]
// scores as bf16 bits, acc: [G][D] scratch.
void attend_group(const float* q, int64_t qs, int64_t G, const cache::EntryArray& kv, int64_t kv_head,
                  int64_t kv_heads, int64_t D, int64_t visible, float scale, const models::KvDots& kd, uint16_t* zb,
                  double* acc, float* o, int64_t os) {
  thread_local Bf16Memo e_memo, p_memo;
  double dots[8];
  std::vector<double> q64(static_cast<size_t>(G * D));  // widened once, not once a key
  for (int64_t g = 0; g < G; ++g)
    for (int64_t i = 0; i < D; ++i) q64[size_t(g * D + i)] = double(q[g * qs + i]);
  std::vector<double> mx(static_cast<size_t>(G), -INFINITY);
  for (int64_t j = 0; j < visible; ++j) {
    const auto* kj = reinterpret_cast<const uint16_t*>(kv.entry(j)) + kv_head * D;
    for (int64_t g0 = 0; g0 < G; g0 += 8) {
      const int64_t gn = std::min<int64_t>(8, G - g0);
      kd.dots(q64.data() + g0 * D, D, gn, kj, D, dots);
      for (int64_t g = g0; g < g0 + gn; ++g) {
        const float zj = round_bf16(round_bf16(float(dots[g - g0])) * scale);
        zb[g * visible + j] = f32_to_bf16(zj);
        mx[size_t(g)] = std::max(mx[size_t(g)], double(zj));
      }
    }
  }
  // Per head: the softmax sum in key order, then each key's weight p (a bf16 value) written
  // over its score.
  for (int64_t g = 0; g < G; ++g) {
    uint16_t* z = zb + g * visible;
    const double m = mx[size_t(g)];
    e_memo.clear();
    const auto e = [&](uint16_t bits) {
      return e_memo.get(bits, [&] { return std::exp(double(bf16_to_f32(bits)) - m); });
    };
    double s = 0.0;
    for (int64_t j = 0; j < visible; ++j) s += e(z[j]);
    p_memo.clear();
    for (int64_t j = 0; j < visible; ++j) {
      const uint16_t bits = z[j];
      z[j] = uint16_t(p_memo.get(bits, [&] { return double(f32_to_bf16(float(e(bits) / s))); }));
    }
  }
  // P·V, each value row read once for the group, in blocks of keys; each element sums in key order.
  constexpr int64_t kKeys = 64;
  std::fill(acc, acc + G * D, 0.0);
  std::vector<double> p(static_cast<size_t>(kKeys * G));
  const uint16_t* v[kKeys];
  for (int64_t j0 = 0; j0 < visible; j0 += kKeys) {
    const int64_t nk = std::min(kKeys, visible - j0);
    for (int64_t j = 0; j < nk; ++j) {
      v[j] = reinterpret_cast<const uint16_t*>(kv.entry(j0 + j)) + (kv_heads + kv_head) * D;
      for (int64_t g = 0; g < G; ++g) p[size_t(j * G + g)] = double(bf16_to_f32(zb[g * visible + j0 + j]));
    }
    kd.accumulate(acc, G, p.data(), v, nk, D);
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
      // Scratch kept per thread: at long context z is megabytes, and a fresh allocation each
      // call costs its page faults (slow on these VMs) and its zeroing.
      thread_local std::vector<uint16_t> zb;
      thread_local std::vector<double> acc;
      if (zb.size() < size_t(group * (s.pos0 + s.rows))) zb.resize(size_t(group * (s.pos0 + s.rows)));
      if (acc.size() < size_t(group * D)) acc.resize(size_t(group * D));
      for (int64_t i = b; i < e; ++i) {
        const int64_t t = i / KV, kvh = i % KV, r = r0 + t, h0 = kvh * group;
        attend_group(qg.data() + (r * H + h0) * 2 * D, 2 * D, group, s.layer->kv, kvh, KV, D, s.pos0 + t + 1, scale,
                     dots, zb.data(), acc.data(), o.data() + (r * H + h0) * D, D);
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
