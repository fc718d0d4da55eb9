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

#include "models/deepseek_v4/cache_layout.h"

namespace strata::dsv4 {

DecodeTraffic decode_traffic(const Config& c, int64_t context) {
  DecodeTraffic t;
  const double share = double(c.num_experts_per_tok) / double(c.n_routed_experts);
  for (const auto& e : expected_tensors(c)) {
    if (e.mtp) continue;
    double bytes = double(dtype_size(e.dtype));
    for (auto d : e.shape) bytes *= double(d);
    if (e.name == "embed.weight") bytes = double(c.hidden_size) * 2;  // one row
    const bool hash = e.layer >= 0 && c.is_hash_layer(e.layer);
    if (hash && e.name.ends_with(".ffn.gate.tid2eid")) bytes /= double(c.vocab_size);  // one row
    if (hash && e.name.ends_with(".ffn.gate.weight"))  // the chosen experts' rows (moe.cpp: gate_scores)
      bytes *= double(c.num_experts_per_tok) / double(c.n_routed_experts);
    if (e.component == Component::routed_expert) t.routed_experts += bytes * share;
    else t.weights += bytes;
  }
  const int64_t kv = kv_entry_bytes(c), ik = index_key_bytes(c, IndexKeyFormat::fp4);
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const int64_t r = c.compress_ratio(l);
    t.caches += double(std::min(context, c.sliding_window) * kv);
    if (r == 4) {
      const int64_t n = context / 4;
      t.caches += double(std::min(n, c.index_topk) * kv + n * ik);
      t.caches += double(2 * 8 * 1024 * 4 + 2 * 8 * 2 * c.index_head_dim * 4);
    } else if (r > 0) {
      t.caches += double(context / r * kv + 2 * r * c.head_dim * 4);
    }
  }
  return t;
}

}  // namespace strata::dsv4
