#include "models/deepseek_v4/params.h"

namespace strata::dsv4 {

ParamCounts count_params(const Config& c) {
  ParamCounts p;
  const double active_share = double(c.num_experts_per_tok) / double(c.n_routed_experts);
  for (const auto& t : expected_tensors(c)) {
    int64_t n = 1;
    for (auto d : t.shape) n *= d;
    const uint64_t b = uint64_t(n) * uint64_t(dtype_size(t.dtype));
    p.bytes[t.dtype] += b;
    p.bytes_all += b;
    const int64_t params = t.logical_params;
    // A routed expert tensor is active for k of E experts: count that share exactly per layer
    // by attributing params * k / E (the sum over a layer's E experts is then exact).
    const double act = t.component == Component::routed_expert ? double(params) * active_share : double(params);
    if (t.mtp) {
      p.mtp_total += params;
      p.mtp_active += int64_t(act + 0.5);
      continue;
    }
    p.total[t.component] += params;
    p.active[t.component] += int64_t(act + 0.5);
  }
  for (auto& [k, v] : p.total) p.total_all += v;
  for (auto& [k, v] : p.active) p.active_all += v;
  return p;
}

}  // namespace strata::dsv4
