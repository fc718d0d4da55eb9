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
  models::ConfigReader r(j, w, c.keys);
  c.model_type = r.string("model_type");
  if (c.model_type != "deepseek_v4")
    throw Error(w + ": model_type '" + c.model_type + "' is not deepseek_v4");
  r.metadata({"architectures"});
  if (j.contains("architectures") && j["architectures"].is_array())
    for (auto& a : j["architectures"])
      if (a.is_string()) c.architectures.push_back(a.get<std::string>());
  // Kept to be written back by make-model; nothing computed depends on them.
  c.attention_dropout = r.metadata_or("attention_dropout", c.attention_dropout);
  c.bos_token_id = r.metadata_or("bos_token_id", c.bos_token_id);
  c.initializer_range = r.metadata_or("initializer_range", c.initializer_range);
  c.torch_dtype = r.metadata_or("torch_dtype", c.torch_dtype);
  c.transformers_version = r.metadata_or("transformers_version", std::string());
  c.use_cache = r.metadata_or("use_cache", true);

  c.attention_bias = r.boolean_or("attention_bias", c.attention_bias);
  c.eos_token_id = r.integer_or("eos_token_id", c.eos_token_id);
  c.hc_eps = r.number("hc_eps");
  c.hc_mult = r.integer("hc_mult");
  c.hc_sinkhorn_iters = r.integer("hc_sinkhorn_iters");
  c.head_dim = r.integer("head_dim");
  c.hidden_act = r.string_or("hidden_act", c.hidden_act);
  c.hidden_size = r.integer("hidden_size");
  c.index_head_dim = r.integer("index_head_dim");
  c.index_n_heads = r.integer("index_n_heads");
  c.index_topk = r.integer("index_topk");
  c.max_position_embeddings = r.integer("max_position_embeddings");
  c.moe_intermediate_size = r.integer("moe_intermediate_size");
  c.n_routed_experts = r.integer("n_routed_experts");
  c.n_shared_experts = r.integer("n_shared_experts");
  c.norm_topk_prob = r.boolean_or("norm_topk_prob", c.norm_topk_prob);
  c.num_attention_heads = r.integer("num_attention_heads");
  c.num_experts_per_tok = r.integer("num_experts_per_tok");
  c.num_hidden_layers = r.integer("num_hidden_layers");
  c.num_hash_layers = r.integer_or("num_hash_layers", 0);
  c.num_key_value_heads = r.integer("num_key_value_heads");
  c.num_nextn_predict_layers = r.integer_or("num_nextn_predict_layers", 0);
  c.o_groups = r.integer("o_groups");
  c.o_lora_rank = r.integer("o_lora_rank");
  c.q_lora_rank = r.integer("q_lora_rank");
  c.qk_rope_head_dim = r.integer("qk_rope_head_dim");
  auto& qc = c.quantization_config;
  const json qdefault = {{"fmt", qc.fmt}, {"scale_fmt", qc.scale_fmt},
                         {"weight_block_size", {qc.weight_block_rows, qc.weight_block_cols}}};
  if (auto q = r.optional_object("quantization_config", qdefault)) {
    qc.activation_scheme = q->metadata_or("activation_scheme", qc.activation_scheme);
    qc.quant_method = q->metadata_or("quant_method", qc.quant_method);
    qc.fmt = q->string_or("fmt", qc.fmt);
    qc.scale_fmt = q->string_or("scale_fmt", qc.scale_fmt);
    const json b = q->get_or("weight_block_size", json::array({qc.weight_block_rows, qc.weight_block_cols}));
    if (!b.is_array() || b.size() != 2 || !b[0].is_number_integer() || !b[1].is_number_integer())
      throw Error(q->where() + ": weight_block_size must be [rows, cols]");
    qc.weight_block_rows = b[0].get<int64_t>();
    qc.weight_block_cols = b[1].get<int64_t>();
  }
  c.rms_norm_eps = r.number("rms_norm_eps");
  // Absent: no YaRN anywhere.
  if (auto rs = r.optional_object("rope_scaling", nullptr)) {
    const bool renamed = !rs->has("type") && rs->has("rope_type");  // transformers' newer spelling
    c.rope_scaling.type = rs->string_or(renamed ? "rope_type" : "type", "yarn");
    rs->metadata({renamed ? "type" : "rope_type"});
    c.rope_scaling.factor = rs->number("factor");
    c.rope_scaling.original_max_position_embeddings = rs->integer("original_max_position_embeddings");
    c.rope_scaling.beta_fast = rs->number_or("beta_fast", 32);
    c.rope_scaling.beta_slow = rs->number_or("beta_slow", 1);
  } else {
    c.rope_scaling.factor = 1.0;
  }
  c.rope_theta = r.number("rope_theta");
  c.routed_scaling_factor = r.number("routed_scaling_factor");
  c.scoring_func = r.string_or("scoring_func", c.scoring_func);
  c.sliding_window = r.integer("sliding_window");
  c.swiglu_limit = r.number_or("swiglu_limit", 0.0);
  c.tie_word_embeddings = r.boolean_or("tie_word_embeddings", false);
  c.topk_method = r.string_or("topk_method", c.topk_method);
  c.vocab_size = r.integer("vocab_size");
  c.compress_rope_theta = r.number_or("compress_rope_theta", 0.0);
  if (!r.has("compress_ratios") || !j["compress_ratios"].is_array())
    throw Error(w + ": missing key 'compress_ratios' (a list, one entry per layer)");
  for (auto& x : r.get<json>("compress_ratios")) {
    if (!x.is_number_integer()) throw Error(w + ": compress_ratios must hold integers");
    c.compress_ratios.push_back(x.get<int64_t>());
  }
  c.expert_dtype = r.string_or("expert_dtype", "fp4");
  c.keys.finish();
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
