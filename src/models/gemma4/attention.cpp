#include "models/gemma4/attention.h"

#include <algorithm>

#include "core/huge_buffer.h"
#include "core/numfmt.h"
#include "kernels/linear.h"
#include "kernels/parallel.h"
#include "kernels/rmsnorm.h"
#include "models/gemma4/k_eq_v.h"
#include "models/gemma4/sliding_window.h"
#include "models/layers/exact_attention.h"

namespace strata::gemma4 {

namespace {

// A full layer's view after its rows were appended: K + V entries read in place, K=V entries
// rebuilt (k, v) for every visible position.
KvView full_view(const Config& c, int64_t l, const AttentionWeights& w, const models::RopeTable& table,
                 const LayerState& L, int64_t end) {
  const int64_t KV = c.layer_kv_heads(l), D = c.layer_head_dim(l), kvv = KV * D;
  KvView v;
  v.first = 0;
  v.k.resize(size_t(end)), v.v.resize(size_t(end));
  if (!c.k_eq_v(l)) {
    for (int64_t p = 0; p < end; ++p) {
      v.k[size_t(p)] = reinterpret_cast<const uint16_t*>(L.kv.entry(p));
      v.v[size_t(p)] = v.k[size_t(p)] + kvv;
    }
    return v;
  }
  v.owned.resize(size_t(end * 2 * kvv));
  const float eps = float(c.rms_norm_eps);
  table.reach(end);
  kernels::parallel_for(end, 64, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      uint16_t* kp = v.owned.data() + p * 2 * kvv;
      k_eq_v_rebuild(reinterpret_cast<const uint16_t*>(L.kv.entry(p)), KV, D, w.k_norm, eps, table.row(p),
                     table.angles(), kp, kp + kvv);
    }
  });
  for (int64_t p = 0; p < end; ++p) {
    v.k[size_t(p)] = v.owned.data() + p * 2 * kvv;
    v.v[size_t(p)] = v.k[size_t(p)] + kvv;
  }
  return v;
}

}  // namespace

void attention(const Config& c, int64_t l, const AttentionWeights& w, const models::RotateHalfRope& rope,
               const models::RopeTable& table, const std::vector<Segment>& segs, const float* x, int64_t n, float* out,
               std::vector<KvView>& views) {
  const int64_t H = c.num_attention_heads, KV = c.layer_kv_heads(l), D = c.layer_head_dim(l), group = H / KV;
  const int64_t kvv = KV * D;
  const float eps = float(c.rms_norm_eps);
  const bool sliding = c.sliding(l), shared = c.kv_shared(l), keqv = c.k_eq_v(l);
  const int64_t W = c.sliding_window;
  CallBuffer<float> q(size_t(n * H * D)), o(size_t(n * H * D));
  kernels::linear(w.q, x, n, q.data(), true);
  const int64_t half = rope.rotary_dim() / 2;
  std::vector<float> cs(static_cast<size_t>(half)), sn(static_cast<size_t>(half));
  {
    int64_t row = 0;
    for (const Segment& s : segs)
      for (int64_t t = 0; t < s.rows; ++t, ++row) {
        rope.cos_sin(s.pos0 + t, cs.data(), sn.data());
        for (int64_t h = 0; h < H; ++h) {
          float* qh = q.data() + (row * H + h) * D;
          kernels::rms_norm(qh, w.q_norm, D, eps, qh);
          rope.apply(qh, cs.data(), sn.data());
        }
      }
  }
  if (!shared) {
    // This pass's entries: K + V after their norms and RoPE, or the K=V projection itself.
    CallBuffer<float> k(size_t(n * kvv)), v(size_t(keqv ? 0 : n * kvv));
    kernels::linear(w.k, x, n, k.data(), true);
    if (!keqv) kernels::linear(w.v, x, n, v.data(), true);
    const int64_t ev = keqv ? kvv : 2 * kvv;
    std::vector<uint16_t> fresh(size_t(n * ev));
    int64_t row = 0;
    for (const Segment& s : segs)
      for (int64_t t = 0; t < s.rows; ++t, ++row) {
        uint16_t* e = fresh.data() + row * ev;
        if (keqv) {
          for (int64_t i = 0; i < kvv; ++i) e[i] = f32_to_bf16(k[size_t(row * kvv + i)]);
          continue;
        }
        rope.cos_sin(s.pos0 + t, cs.data(), sn.data());
        for (int64_t h = 0; h < KV; ++h) {
          float* kh = k.data() + row * kvv + h * D;
          float* vh = v.data() + row * kvv + h * D;
          kernels::rms_norm(kh, w.k_norm, D, eps, kh);
          rope.apply(kh, cs.data(), sn.data());
          kernels::rms_norm(vh, nullptr, D, eps, vh);
        }
        for (int64_t i = 0; i < kvv; ++i) e[i] = f32_to_bf16(k[size_t(row * kvv + i)]);
        for (int64_t i = 0; i < kvv; ++i) e[kvv + i] = f32_to_bf16(v[size_t(row * kvv + i)]);
      }
    views.assign(segs.size(), KvView{});
    row = 0;
    for (size_t i = 0; i < segs.size(); ++i) {
      const Segment& s = segs[i];
      LayerState& L = *s.layer;
      const uint16_t* f = fresh.data() + row * ev;
      if (sliding) {
        views[i] = sliding_view(L, f, s.pos0, s.rows, kvv);
        write_ring(L, f, s.pos0, s.rows, s.undo);
      } else {
        for (int64_t t = 0; t < s.rows; ++t) {
          cache::save_before_append(s.undo, s.pos0 + t, L.kv);
          std::copy_n(f + t * ev, ev, reinterpret_cast<uint16_t*>(L.kv.append()));
        }
        views[i] = full_view(c, l, w, table, L, s.pos0 + s.rows);
      }
      row += s.rows;
    }
  }
  // Each (row, KV head) attends with its group of query heads on its own: split over the
  // threads, the same bits on any count.
  const models::KvDots dots = models::kv_dots();
  int64_t row = 0;
  for (size_t si = 0; si < segs.size(); ++si) {
    const Segment& s = segs[si];
    const KvView& view = views[si];
    const int64_t r0 = row;
    kernels::parallel_for(s.rows * KV, 1, [&](int64_t b, int64_t e) {
      thread_local std::vector<uint16_t> zb;
      thread_local std::vector<double> acc;
      const int64_t most = int64_t(view.k.size());
      if (zb.size() < size_t(group * most)) zb.resize(size_t(group * most));
      if (acc.size() < size_t(group * D)) acc.resize(size_t(group * D));
      for (int64_t i = b; i < e; ++i) {
        const int64_t t = i / KV, kvh = i % KV, r = r0 + t, h0 = kvh * group, p = s.pos0 + t;
        const int64_t lo = sliding ? std::max(view.first, p - W + 1) : view.first;
        models::attend_group(q.data() + (r * H + h0) * D, D, group, view.k.data() + (lo - view.first),
                             view.v.data() + (lo - view.first), kvh * D, p - lo + 1, D, 1.0f, dots, zb.data(),
                             acc.data(), o.data() + (r * H + h0) * D, D);
      }
    });
    row += s.rows;
  }
  kernels::linear(w.o, o.data(), n, out, true);
}

}  // namespace strata::gemma4
