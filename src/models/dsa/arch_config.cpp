#include "models/dsa/arch_config.h"

#include <algorithm>
#include <cstdio>

#include "core/human_units.h"
#include "models/dsa/tensors.h"

namespace strata::dsa {

ArchConfig::ArchConfig(Config c) : cfg_(std::move(c)) {
  facts_.model_type = cfg_.model_type;
  facts_.architectures = cfg_.architectures;
  facts_.vocab_size = cfg_.vocab_size;
  facts_.max_positions = cfg_.max_position_embeddings;
  facts_.hidden_size = cfg_.hidden_size;
  facts_.layers = cfg_.num_hidden_layers;
  facts_.mtp_layers = cfg_.num_nextn_predict_layers;
  facts_.eos_token_ids = cfg_.eos_token_ids;
  facts_.hidden_width = cfg_.hidden_size;  // the final norm's output: what the MTP layer reads
}

namespace {

struct Counts {
  int64_t total = 0, active = 0, embedding = 0, mtp = 0;
  uint64_t bytes = 0;
  std::vector<std::pair<Part, int64_t>> by_part;
};

// Parameters a tensor stands for: none for a block scale.
int64_t params_of(const ExpectedTensor& t) { return t.scale ? 0 : t.numel(); }

Counts count(const Config& c) {
  Counts n;
  const double share = double(c.num_experts_per_tok) / double(c.n_routed_experts);
  for (const auto& t : expected_tensors(c)) {
    if (t.optional) continue;  // the MTP layer's copies of the embedding and head
    n.bytes += uint64_t(t.numel()) * uint64_t(dtype_size(t.dtypes[0]));
    const int64_t p = params_of(t);
    if (t.mtp(c)) {
      n.mtp += p;
      continue;
    }
    n.total += p;
    n.active += t.part == Part::routed_expert ? int64_t(double(p) * share + 0.5) : p;
    if (t.part == Part::embedding) n.embedding += p;
    auto it = std::find_if(n.by_part.begin(), n.by_part.end(), [&](const auto& e) { return e.first == t.part; });
    if (it == n.by_part.end()) n.by_part.push_back({t.part, p});
    else it->second += p;
  }
  return n;
}

}  // namespace

nlohmann::ordered_json ArchConfig::describe() const {
  const Config& c = cfg_;
  const Counts n = count(c);
  nlohmann::ordered_json j;
  j["model_type"] = c.model_type;
  j["architecture"] = {{"hidden_size", c.hidden_size}, {"layers", c.num_hidden_layers},
                       {"mtp_layers", c.num_nextn_predict_layers}, {"heads", c.num_attention_heads},
                       {"q_lora_rank", c.q_lora_rank}, {"kv_lora_rank", c.kv_lora_rank},
                       {"qk_nope_head_dim", c.qk_nope_head_dim}, {"qk_rope_head_dim", c.qk_rope_head_dim},
                       {"v_head_dim", c.v_head_dim}, {"softmax_scale", c.softmax_scale()},
                       {"rope_theta", c.rope_theta}, {"yarn_factor", c.yarn.on ? c.yarn.factor : 1.0},
                       {"index_heads", c.index_n_heads}, {"index_head_dim", c.index_head_dim},
                       {"index_topk", c.index_topk}, {"indexer_rope", c.indexer_rope_interleave ? "interleaved" : "half-split"},
                       {"dense_intermediate_size", c.intermediate_size},
                       {"experts", {{"routed", c.n_routed_experts}, {"per_token", c.num_experts_per_tok},
                                    {"shared", c.n_shared_experts}, {"inner", c.moe_intermediate_size},
                                    {"groups", c.n_group}, {"topk_groups", c.topk_group},
                                    {"routed_scaling_factor", c.routed_scaling_factor}}},
                       {"weights", c.fp8 ? "fp8 e4m3, 128x128 blocks, ue8m0 scales" : "bf16"},
                       {"vocab_size", c.vocab_size}, {"max_position_embeddings", c.max_position_embeddings}};
  j["schedule"] = {{"dense_layers", c.first_k_dense_replace},
                   {"moe_layers", c.num_hidden_layers - c.first_k_dense_replace},
                   {"indexer_full_layers", c.full_indexer_layers()},
                   {"indexer_shared_layers", c.num_hidden_layers - c.full_indexer_layers()},
                   {"indexer_types", c.indexer_types}};
  nlohmann::ordered_json parts = nlohmann::ordered_json::object();
  for (const auto& [p, v] : n.by_part) parts[part_name(p)] = v;
  j["parameters"] = {{"total", n.total}, {"active_per_token", n.active}, {"embedding", n.embedding},
                     {"mtp_total", n.mtp}, {"by_part", parts}};
  j["bytes"] = {{"total", n.bytes}};
  return j;
}

std::string ArchConfig::describe_text() const {
  const Config& c = cfg_;
  const Counts n = count(c);
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "model_type: %s (%s)\nhidden %lld, %lld layers (%lld dense + %lld MoE) + %lld MTP; MLA %lld heads, "
                "q_lora %lld, kv_lora %lld, nope %lld + rope %lld, v %lld; RoPE theta %g%s\n"
                "indexer: %lld heads x %lld, top-%lld, %s RoPE, %lld full + %lld shared layers\n"
                "MoE: %lld experts x %lld, top-%lld (%lld groups, best %lld), %lld shared, scale %g; dense %lld\n"
                "weights %s; parameters: %s total, %s active per token (%s embedding); %s\n",
                c.model_type.c_str(), c.architectures.empty() ? "" : c.architectures[0].c_str(),
                (long long)c.hidden_size, (long long)c.num_hidden_layers, (long long)c.first_k_dense_replace,
                (long long)(c.num_hidden_layers - c.first_k_dense_replace), (long long)c.num_nextn_predict_layers,
                (long long)c.num_attention_heads, (long long)c.q_lora_rank, (long long)c.kv_lora_rank,
                (long long)c.qk_nope_head_dim, (long long)c.qk_rope_head_dim, (long long)c.v_head_dim, c.rope_theta,
                c.yarn.on ? (", YaRN x" + std::to_string(int(c.yarn.factor))).c_str() : "",
                (long long)c.index_n_heads, (long long)c.index_head_dim, (long long)c.index_topk,
                c.indexer_rope_interleave ? "interleaved" : "half-split", (long long)c.full_indexer_layers(),
                (long long)(c.num_hidden_layers - c.full_indexer_layers()), (long long)c.n_routed_experts,
                (long long)c.moe_intermediate_size, (long long)c.num_experts_per_tok, (long long)c.n_group,
                (long long)c.topk_group, (long long)c.n_shared_experts, c.routed_scaling_factor,
                (long long)c.intermediate_size, c.fp8 ? "FP8 e4m3 (128x128 blocks)" : "bf16",
                human_count(double(n.total)).c_str(), human_count(double(n.active)).c_str(),
                human_count(double(n.embedding)).c_str(), human_bytes(double(n.bytes)).c_str());
  return buf;
}

models::CheckReport ArchConfig::check_checkpoint(const SafetensorsCheckpoint& ckpt) const {
  return dsa::check_checkpoint(cfg_, ckpt);
}

models::DecodeTraffic ArchConfig::decode_traffic(int64_t context) const {
  const Config& c = cfg_;
  models::DecodeTraffic t;
  const double share = double(c.num_experts_per_tok) / double(c.n_routed_experts);
  for (const auto& e : expected_tensors(c)) {
    if (e.mtp(c) || e.optional) continue;
    const double b = double(e.numel()) * double(dtype_size(e.dtypes[0]));
    if (e.part == Part::embedding) t.weights += double(c.hidden_size) * 2;  // one row
    else if (e.part == Part::routed_expert) t.routed_experts += b * share;
    else t.weights += b;
  }
  // The indexer scans every index key of its layer; attention reads the selected latents.
  const double selected = double(std::min(context, c.index_topk));
  t.caches = double(c.num_hidden_layers) * selected * double(c.latent_entry_bytes()) +
             double(c.full_indexer_layers()) * double(context) * double(c.index_entry_bytes());
  return t;
}

double ArchConfig::prefill_flops_per_token() const {
  const Counts n = count(cfg_);
  return 2.0 * double(n.active - n.embedding);  // the embedding is a lookup; the head is its own matrix
}

}  // namespace strata::dsa
