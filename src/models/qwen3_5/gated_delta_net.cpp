#include "models/qwen3_5/gated_delta_net.h"

#include <cstring>
#include <vector>

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
  // The conv tail chains a sequence's tokens, so the conv and the q/k preparation run token
  // after token; each token's state pointers are taken here too, in token order (the undo log
  // records them as it did one token at a time).
  CallBuffer<float> conv(size_t(n * cd));
  std::vector<cache::DraftStep<float>> steps(static_cast<size_t>(n));
  int64_t row = 0;
  for (const Segment& s : segs) {
    LayerState& L = *s.layer;
    for (int64_t t = 0; t < s.rows; ++t, ++row) {
      steps[size_t(row)] = cache::draft_step<float>(L.state.data(), L.state_drafts.data(), c.state_floats(),
                                                    L.draft_copies, t, s.rows, s.pos0, s.undo);
      const auto cp = cache::draft_step<uint16_t>(L.conv.data(), L.conv_drafts.data(), c.conv_tail_values(),
                                                  L.draft_copies, t, s.rows, s.pos0, s.undo);
      float* r = conv.data() + row * cd;
      models::causal_conv1d_step(cp.in, cp.out, mixed.data() + row * cd, w.conv.data(), cd, K, r);
      for (int64_t h = 0; h < hk; ++h) models::prepare_delta_qk(r + h * dk, r + (hk + h) * dk, dk);
    }
  }
  // Value heads are independent: each on one thread through every row in order (one hand-off
  // per layer, not per token), the same bits on any thread count.
  CallBuffer<float> y(size_t(n * hv * dv));
  kernels::parallel_for(hv, 1, [&](int64_t h0, int64_t h1) {
    std::vector<float> o(static_cast<size_t>(dv));
    for (int64_t h = h0; h < h1; ++h)
      for (int64_t r = 0; r < n; ++r) {
        const float* q = conv.data() + r * cd + (h / rep) * dk;
        const float* k = q + hk * dk;
        const float* v = conv.data() + r * cd + 2 * hk * dk + h * dv;
        float g, beta;
        models::delta_gates(a[size_t(r * hv + h)], b[size_t(r * hv + h)], w.a_log[size_t(h)], w.dt_bias[size_t(h)], &g,
                            &beta);
        const auto& st = steps[size_t(r)];
        models::gated_delta_step(st.in + h * dk * dv, st.out + h * dk * dv, q, k, v, g, beta, dk, dv, o.data());
        const int64_t at = (r * hv + h) * dv;
        models::gated_rms_norm(o.data(), z.data() + at, w.norm, dv, eps, y.data() + at);
      }
  });
  kernels::linear(w.out, y.data(), n, out, true);
}

}  // namespace strata::qwen35
