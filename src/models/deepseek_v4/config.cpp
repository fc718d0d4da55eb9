#include "models/deepseek_v4/config.h"

#include <filesystem>

#include "core/error.h"
#include "io/json_file.h"

namespace strata::dsv4 {
using nlohmann::json;

LayerKind Config::layer_kind(int64_t layer) const {
  switch (compress_ratio(layer)) {
    case 4: return LayerKind::csa;
    case 128: return LayerKind::hca;
    default: return LayerKind::window;
  }
}

const char* layer_kind_name(LayerKind k) {
  switch (k) {
    case LayerKind::window: return "window";
    case LayerKind::csa: return "CSA";
    case LayerKind::hca: return "HCA";
  }
  return "?";
}

namespace {

void require(bool ok, const std::string& where, const std::string& what) {
  if (!ok) throw Error(where + ": " + what);
}

void validate(const Config& c, const std::string& w) {
  auto pos = [&](int64_t v, const char* k) { require(v > 0, w, std::string(k) + " must be positive"); };
  pos(c.hidden_size, "hidden_size");
  pos(c.num_attention_heads, "num_attention_heads");
  pos(c.num_hidden_layers, "num_hidden_layers");
  pos(c.vocab_size, "vocab_size");
  pos(c.head_dim, "head_dim");
  pos(c.q_lora_rank, "q_lora_rank");
  pos(c.o_groups, "o_groups");
  pos(c.o_lora_rank, "o_lora_rank");
  pos(c.n_routed_experts, "n_routed_experts");
  pos(c.num_experts_per_tok, "num_experts_per_tok");
  pos(c.moe_intermediate_size, "moe_intermediate_size");
  pos(c.hc_mult, "hc_mult");
  pos(c.hc_sinkhorn_iters, "hc_sinkhorn_iters");
  pos(c.sliding_window, "sliding_window");
  pos(c.index_n_heads, "index_n_heads");
  pos(c.index_head_dim, "index_head_dim");
  pos(c.index_topk, "index_topk");
  require(c.num_nextn_predict_layers >= 0, w, "num_nextn_predict_layers must be >= 0");
  require(c.num_hash_layers >= 0 && c.num_hash_layers <= c.num_hidden_layers, w,
          "num_hash_layers must be in [0, num_hidden_layers]");
  require(int64_t(c.compress_ratios.size()) == c.n_layers_total(), w,
          "compress_ratios has " + std::to_string(c.compress_ratios.size()) +
              " entries but num_hidden_layers + num_nextn_predict_layers = " + std::to_string(c.n_layers_total()));
  for (size_t i = 0; i < c.compress_ratios.size(); ++i) {
    int64_t r = c.compress_ratios[i];
    require(r == 0 || r == 4 || r == 128, w,
            "compress_ratios[" + std::to_string(i) + "] = " + std::to_string(r) + " (must be 0, 4 or 128)");
  }
  require(c.num_key_value_heads == 1, w, "num_key_value_heads must be 1 (one shared KV head)");
  require(c.n_shared_experts == 1, w, "n_shared_experts must be 1");
  require(c.num_experts_per_tok <= c.n_routed_experts, w, "num_experts_per_tok exceeds n_routed_experts");
  require(c.num_attention_heads % c.o_groups == 0, w, "num_attention_heads must be a multiple of o_groups");
  require(c.qk_rope_head_dim > 0 && c.qk_rope_head_dim % 2 == 0 && c.qk_rope_head_dim < c.head_dim, w,
          "qk_rope_head_dim must be even and smaller than head_dim");
  // The window KV's non-RoPE dims are fake-quantized to FP8 in blocks of 64.
  require((c.head_dim - c.qk_rope_head_dim) % 64 == 0, w, "head_dim - qk_rope_head_dim must be a multiple of 64");
  // The indexer rotates keys and queries with a Hadamard transform and quantizes them to FP4 in 32s.
  require((c.index_head_dim & (c.index_head_dim - 1)) == 0 && c.index_head_dim % 32 == 0 &&
              c.index_head_dim > c.qk_rope_head_dim, w,
          "index_head_dim must be a power of two, a multiple of 32 and larger than qk_rope_head_dim");
  // FP8 weights use 128x128 blocks and activations are quantized in 1x128 blocks along the
  // input dim of every FP8/FP4 linear, so those dims must be multiples of the block.
  const auto& q = c.quantization_config;
  require(q.weight_block_rows == 128 && q.weight_block_cols == 128, w,
          "quantization_config.weight_block_size must be [128, 128]");
  const int64_t in_dims[] = {c.hidden_size, c.q_lora_rank, c.num_attention_heads * c.head_dim / c.o_groups,
                             c.o_groups * c.o_lora_rank, c.moe_intermediate_size};
  const char* in_names[] = {"hidden_size", "q_lora_rank", "num_attention_heads*head_dim/o_groups",
                            "o_groups*o_lora_rank", "moe_intermediate_size"};
  for (int i = 0; i < 5; ++i)
    require(in_dims[i] % q.weight_block_cols == 0, w,
            std::string(in_names[i]) + " = " + std::to_string(in_dims[i]) + " is not a multiple of the 128 quantization block");
  require(c.expert_dtype == "fp4" || c.expert_dtype == "fp8", w, "expert_dtype must be fp4 or fp8");
  require(c.scoring_func == "sqrtsoftplus" || c.scoring_func == "softmax" || c.scoring_func == "sigmoid", w,
          "scoring_func must be sqrtsoftplus, softmax or sigmoid");
  require(c.hidden_act == "silu", w, "hidden_act must be silu");
  require(c.quantization_config.scale_fmt == "ue8m0", w, "quantization_config.scale_fmt must be ue8m0");
  require(c.quantization_config.fmt == "e4m3", w, "quantization_config.fmt must be e4m3");
  require(c.rms_norm_eps > 0 && c.hc_eps > 0, w, "rms_norm_eps and hc_eps must be positive");
  require(c.rope_theta > 0, w, "rope_theta must be positive");
  bool any_compressed = false;
  for (int64_t r : c.compress_ratios) any_compressed |= r > 0;
  if (any_compressed) require(c.compress_rope_theta > 0, w, "compress_rope_theta must be positive");
  require(c.rope_scaling.factor >= 1.0, w, "rope_scaling.factor must be >= 1");
  if (c.rope_scaling.factor > 1.0)
    require(c.rope_scaling.type == "yarn" && c.rope_scaling.original_max_position_embeddings > 0, w,
            "rope_scaling must be yarn with original_max_position_embeddings");
}

}  // namespace

Config parse_config(const json& j, const std::string& w) {
  if (!j.is_object()) throw Error(w + ": not a JSON object");
  Config c;
  c.model_type = json_string(j, "model_type", w);
  if (c.model_type != "deepseek_v4")
    throw Error(w + ": model_type '" + c.model_type + "' is not deepseek_v4");
  if (j.contains("architectures") && j["architectures"].is_array())
    for (auto& a : j["architectures"])
      if (a.is_string()) c.architectures.push_back(a.get<std::string>());
  c.attention_bias = json_bool_or(j, "attention_bias", c.attention_bias, w);
  c.attention_dropout = json_number_or(j, "attention_dropout", c.attention_dropout, w);
  c.bos_token_id = json_int_or(j, "bos_token_id", c.bos_token_id, w);
  c.eos_token_id = json_int_or(j, "eos_token_id", c.eos_token_id, w);
  c.hc_eps = json_number(j, "hc_eps", w);
  c.hc_mult = json_int(j, "hc_mult", w);
  c.hc_sinkhorn_iters = json_int(j, "hc_sinkhorn_iters", w);
  c.head_dim = json_int(j, "head_dim", w);
  c.hidden_act = json_string_or(j, "hidden_act", c.hidden_act, w);
  c.hidden_size = json_int(j, "hidden_size", w);
  c.index_head_dim = json_int(j, "index_head_dim", w);
  c.index_n_heads = json_int(j, "index_n_heads", w);
  c.index_topk = json_int(j, "index_topk", w);
  c.initializer_range = json_number_or(j, "initializer_range", c.initializer_range, w);
  c.max_position_embeddings = json_int(j, "max_position_embeddings", w);
  c.moe_intermediate_size = json_int(j, "moe_intermediate_size", w);
  c.n_routed_experts = json_int(j, "n_routed_experts", w);
  c.n_shared_experts = json_int(j, "n_shared_experts", w);
  c.norm_topk_prob = json_bool_or(j, "norm_topk_prob", c.norm_topk_prob, w);
  c.num_attention_heads = json_int(j, "num_attention_heads", w);
  c.num_experts_per_tok = json_int(j, "num_experts_per_tok", w);
  c.num_hidden_layers = json_int(j, "num_hidden_layers", w);
  c.num_hash_layers = json_int_or(j, "num_hash_layers", 0, w);
  c.num_key_value_heads = json_int(j, "num_key_value_heads", w);
  c.num_nextn_predict_layers = json_int_or(j, "num_nextn_predict_layers", 0, w);
  c.o_groups = json_int(j, "o_groups", w);
  c.o_lora_rank = json_int(j, "o_lora_rank", w);
  c.q_lora_rank = json_int(j, "q_lora_rank", w);
  c.qk_rope_head_dim = json_int(j, "qk_rope_head_dim", w);
  if (j.contains("quantization_config") && !j["quantization_config"].is_null()) {
    const json& q = j["quantization_config"];
    const std::string qw = w + ": quantization_config";
    if (!q.is_object()) throw Error(qw + " must be an object");
    auto& qc = c.quantization_config;
    qc.activation_scheme = json_string_or(q, "activation_scheme", qc.activation_scheme, qw);
    qc.fmt = json_string_or(q, "fmt", qc.fmt, qw);
    qc.quant_method = json_string_or(q, "quant_method", qc.quant_method, qw);
    qc.scale_fmt = json_string_or(q, "scale_fmt", qc.scale_fmt, qw);
    if (q.contains("weight_block_size")) {
      const json& b = q["weight_block_size"];
      if (!b.is_array() || b.size() != 2 || !b[0].is_number_integer() || !b[1].is_number_integer())
        throw Error(qw + ": weight_block_size must be [rows, cols]");
      qc.weight_block_rows = b[0].get<int64_t>();
      qc.weight_block_cols = b[1].get<int64_t>();
    }
  }
  c.rms_norm_eps = json_number(j, "rms_norm_eps", w);
  if (j.contains("rope_scaling") && !j["rope_scaling"].is_null()) {
    const json& r = j["rope_scaling"];
    const std::string rw = w + ": rope_scaling";
    if (!r.is_object()) throw Error(rw + " must be an object");
    c.rope_scaling.type = json_string_or(r, "type", json_string_or(r, "rope_type", "yarn", rw), rw);
    c.rope_scaling.factor = json_number(r, "factor", rw);
    c.rope_scaling.original_max_position_embeddings = json_int(r, "original_max_position_embeddings", rw);
    c.rope_scaling.beta_fast = json_number_or(r, "beta_fast", 32, rw);
    c.rope_scaling.beta_slow = json_number_or(r, "beta_slow", 1, rw);
  } else {
    c.rope_scaling.factor = 1.0;
  }
  c.rope_theta = json_number(j, "rope_theta", w);
  c.routed_scaling_factor = json_number(j, "routed_scaling_factor", w);
  c.scoring_func = json_string_or(j, "scoring_func", c.scoring_func, w);
  c.sliding_window = json_int(j, "sliding_window", w);
  c.swiglu_limit = json_number_or(j, "swiglu_limit", 0.0, w);
  c.tie_word_embeddings = json_bool_or(j, "tie_word_embeddings", false, w);
  c.topk_method = json_string_or(j, "topk_method", c.topk_method, w);
  c.torch_dtype = json_string_or(j, "torch_dtype", c.torch_dtype, w);
  c.transformers_version = json_string_or(j, "transformers_version", "", w);
  c.use_cache = json_bool_or(j, "use_cache", true, w);
  c.vocab_size = json_int(j, "vocab_size", w);
  c.compress_rope_theta = json_number_or(j, "compress_rope_theta", 0.0, w);
  if (!j.contains("compress_ratios") || !j["compress_ratios"].is_array())
    throw Error(w + ": missing key 'compress_ratios' (a list, one entry per layer)");
  for (auto& r : j["compress_ratios"]) {
    if (!r.is_number_integer()) throw Error(w + ": compress_ratios must hold integers");
    c.compress_ratios.push_back(r.get<int64_t>());
  }
  c.expert_dtype = json_string_or(j, "expert_dtype", "fp4", w);
  if (c.tie_word_embeddings) throw Error(w + ": tie_word_embeddings must be false (V4 has its own head)");
  validate(c, w);
  return c;
}

Config load_config(const std::string& dir_or_file) {
  namespace fs = std::filesystem;
  std::string path = dir_or_file;
  if (fs::is_directory(path)) path = (fs::path(path) / "config.json").string();
  return parse_config(read_json_file(path), path);
}

nlohmann::ordered_json to_json(const Config& c) {
  nlohmann::ordered_json j;
  j["architectures"] = c.architectures.empty() ? std::vector<std::string>{"DeepseekV4ForCausalLM"} : c.architectures;
  j["attention_bias"] = c.attention_bias;
  j["attention_dropout"] = c.attention_dropout;
  j["bos_token_id"] = c.bos_token_id;
  j["eos_token_id"] = c.eos_token_id;
  j["hc_eps"] = c.hc_eps;
  j["hc_mult"] = c.hc_mult;
  j["hc_sinkhorn_iters"] = c.hc_sinkhorn_iters;
  j["head_dim"] = c.head_dim;
  j["hidden_act"] = c.hidden_act;
  j["hidden_size"] = c.hidden_size;
  j["index_head_dim"] = c.index_head_dim;
  j["index_n_heads"] = c.index_n_heads;
  j["index_topk"] = c.index_topk;
  j["initializer_range"] = c.initializer_range;
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["model_type"] = c.model_type;
  j["moe_intermediate_size"] = c.moe_intermediate_size;
  j["n_routed_experts"] = c.n_routed_experts;
  j["n_shared_experts"] = c.n_shared_experts;
  j["norm_topk_prob"] = c.norm_topk_prob;
  j["num_attention_heads"] = c.num_attention_heads;
  j["num_experts_per_tok"] = c.num_experts_per_tok;
  j["num_hidden_layers"] = c.num_hidden_layers;
  j["num_hash_layers"] = c.num_hash_layers;
  j["num_key_value_heads"] = c.num_key_value_heads;
  j["num_nextn_predict_layers"] = c.num_nextn_predict_layers;
  j["o_groups"] = c.o_groups;
  j["o_lora_rank"] = c.o_lora_rank;
  j["q_lora_rank"] = c.q_lora_rank;
  j["qk_rope_head_dim"] = c.qk_rope_head_dim;
  const auto& q = c.quantization_config;
  j["quantization_config"] = {{"activation_scheme", q.activation_scheme}, {"fmt", q.fmt},
                              {"quant_method", q.quant_method}, {"scale_fmt", q.scale_fmt},
                              {"weight_block_size", {q.weight_block_rows, q.weight_block_cols}}};
  j["rms_norm_eps"] = c.rms_norm_eps;
  j["rope_scaling"] = {{"beta_fast", c.rope_scaling.beta_fast}, {"beta_slow", c.rope_scaling.beta_slow},
                       {"factor", c.rope_scaling.factor},
                       {"original_max_position_embeddings", c.rope_scaling.original_max_position_embeddings},
                       {"type", c.rope_scaling.type}};
  j["rope_theta"] = c.rope_theta;
  j["routed_scaling_factor"] = c.routed_scaling_factor;
  j["scoring_func"] = c.scoring_func;
  j["sliding_window"] = c.sliding_window;
  j["swiglu_limit"] = c.swiglu_limit;
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  j["topk_method"] = c.topk_method;
  j["torch_dtype"] = c.torch_dtype;
  j["transformers_version"] = c.transformers_version.empty() ? "4.57.1" : c.transformers_version;
  j["use_cache"] = c.use_cache;
  j["vocab_size"] = c.vocab_size;
  j["compress_rope_theta"] = c.compress_rope_theta;
  j["compress_ratios"] = c.compress_ratios;
  j["expert_dtype"] = c.expert_dtype;
  return j;
}

}  // namespace strata::dsv4
