#include "models/qwen3_5/gated_delta_net.h"

#include <cstring>

#include "cache/draft_slots.h"
#include "core/huge_buffer.h"
#include "kernels/parallel.h"
#include "models/layers/causal_conv1d.h"
#include "models/layers/gated_delta_rule.h"
#include "models/layers/gated_rms_norm.h"

namespace strata::qwen35 {

void gated_delta_net(const Config& c, const DeltaNetWeights& w, const std::vector<Segment>& segs, const float* x,
                     int64_t n, float* out) {
  const int64_t cd = c.conv_dim(), hk = c.linear_num_key_heads, hv = c.linear_num_value_heads;
  const int64_t dk = c.linear_key_head_dim, dv = c.linear_value_head_dim, K = c.linear_conv_kernel_dim;
  const int64_t rep = hv / hk;
  const float eps = float(c.rms_norm_eps);
  CallBuffer<float> mixed(size_t(n * cd)), z(size_t(n * hv * dv)), b(size_t(n * hv)), a(size_t(n * hv));
  kernels::linear(w.qkv, x, n, mixed.data(), true);
  kernels::linear(w.z, x, n, z.data(), true);
  kernels::linear(w.b, x, n, b.data(), true);
  kernels::linear(w.a, x, n, a.data(), true);
  CallBuffer<float> y(size_t(n * hv * dv)), conv(static_cast<size_t>(cd));
  int64_t row = 0;
  for (const Segment& s : segs) {
    LayerState& L = *s.layer;
    for (int64_t t = 0; t < s.rows; ++t, ++row) {
      const auto sp = cache::draft_step<float>(L.state.data(), L.state_drafts.data(), c.state_floats(),
                                               L.draft_copies, t, s.rows, s.pos0, s.undo);
      const auto cp = cache::draft_step<uint16_t>(L.conv.data(), L.conv_drafts.data(), c.conv_tail_values(),
                                                  L.draft_copies, t, s.rows, s.pos0, s.undo);
      models::causal_conv1d_step(cp.in, cp.out, mixed.data() + row * cd, w.conv.data(), cd, K, conv.data());
      float* q = conv.data();
      float* k = conv.data() + hk * dk;
      const float* v = conv.data() + 2 * hk * dk;
      for (int64_t h = 0; h < hk; ++h) models::prepare_delta_qk(q + h * dk, k + h * dk, dk);
      // Value heads are independent: each on a thread of its own, the same bits on any count.
      kernels::parallel_for(hv, 1, [&](int64_t h0, int64_t h1) {
        std::vector<float> o(static_cast<size_t>(dv));
        for (int64_t h = h0; h < h1; ++h) {
          float g, beta;
          models::delta_gates(a[size_t(row * hv + h)], b[size_t(row * hv + h)], w.a_log[size_t(h)],
                              w.dt_bias[size_t(h)], &g, &beta);
          models::gated_delta_step(sp.in + h * dk * dv, sp.out + h * dk * dv, q + (h / rep) * dk, k + (h / rep) * dk,
                                   v + h * dv, g, beta, dk, dv, o.data());
          const int64_t at = (row * hv + h) * dv;
          models::gated_rms_norm(o.data(), z.data() + at, w.norm, dv, eps, y.data() + at);
        }
      });
    }
  }
  kernels::linear(w.out, y.data(), n, out, true);
}

}  // namespace strata::qwen35
