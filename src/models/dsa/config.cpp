#include "models/dsa/config.h"

#include <cmath>
#include <optional>

#include "core/error.h"

namespace strata::dsa {
using nlohmann::json;

namespace {

void require(bool ok, const std::string& where, const std::string& what) {
  if (!ok) throw Error(where + ": " + what);
}

// GLM-5's indexer schedule: the explicit list, else a pattern "FSS...", else every freq-th layer
// after the offset (transformers' GlmMoeDsaConfig).
std::vector<std::string> glm_indexer_types(models::ConfigReader& r, int64_t layers, const std::string& w) {
  if (r.has("indexer_types")) {
    r.metadata({"index_topk_pattern", "index_topk_freq", "index_skip_topk_offset"});
    return r.get<std::vector<std::string>>("indexer_types");
  }
  std::vector<std::string> out;
  if (r.has("index_topk_pattern")) {
    r.metadata({"index_topk_freq", "index_skip_topk_offset"});
    const json p = r.get<json>("index_topk_pattern");
    if (p.is_string()) {
      for (char ch : p.get<std::string>()) {
        require(ch == 'F' || ch == 'S', w, "index_topk_pattern holds '" + std::string(1, ch) + "' (only F and S)");
        out.push_back(ch == 'F' ? "full" : "shared");
      }
    } else {
      try {
        out = p.get<std::vector<std::string>>();
      } catch (const json::exception&) {
        throw Error(w + ": index_topk_pattern must be a string of F/S or a list of full/shared");
      }
    }
    return out;
  }
  const int64_t freq = std::max<int64_t>(r.integer_or("index_topk_freq", 1), 1);
  const int64_t offset = r.integer_or("index_skip_topk_offset", 2);
  for (int64_t i = 0; i < layers; ++i) out.push_back(std::max<int64_t>(i - offset + 1, 0) % freq == 0 ? "full" : "shared");
  return out;
}

void read_yarn(models::ConfigReader& s, Yarn& y) {
  y.on = true;
  y.factor = s.number("factor");
  y.original_max_position_embeddings = s.integer("original_max_position_embeddings");
  y.beta_fast = s.number_or("beta_fast", y.beta_fast);
  y.beta_slow = s.number_or("beta_slow", y.beta_slow);
  y.mscale = s.number_or("mscale", y.mscale);
  y.mscale_all_dim = s.number_or("mscale_all_dim", y.mscale_all_dim);
}

// RoPE as deepseek_v32 writes it (rope_theta + rope_scaling {type: yarn}) or as newer
// transformers do (rope_parameters {rope_type, rope_theta, ...}).
void read_rope(models::ConfigReader& r, Config& c, const std::string& w) {
  if (auto rp = r.optional_object("rope_parameters", nullptr)) {
    r.metadata({"rope_theta", "rope_scaling"});
    const std::string type = rp->string_or("rope_type", "default");
    c.rope_theta = rp->number_or("rope_theta", c.rope_theta);
    if (type == "yarn") read_yarn(*rp, c.yarn);
    else require(type == "default", w, "rope_parameters.rope_type '" + type + "' (default or yarn)");
    return;
  }
  c.rope_theta = r.number_or("rope_theta", c.rope_theta);
  if (auto rs = r.optional_object("rope_scaling", nullptr)) {
    const bool renamed = !rs->has("type") && rs->has("rope_type");
    const std::string type = rs->string_or(renamed ? "rope_type" : "type", "yarn");
    rs->metadata({renamed ? "type" : "rope_type"});
    if (type == "yarn") read_yarn(*rs, c.yarn);
    else require(type == "default", w, "rope_scaling type '" + type + "' (default or yarn)");
  }
}

void read_quantization(models::ConfigReader& r, Config& c) {
  const json none = nullptr;
  auto q = r.optional_object("quantization_config", none);
  if (!q) return;
  const std::string w = q->where();
  const std::string method = q->string("quant_method");
  require(method == "fp8", w, "quant_method '" + method + "' (only fp8 block-scaled weights)");
  const std::string fmt = q->string_or("fmt", "e4m3");
  require(fmt == "e4m3", w, "fmt '" + fmt + "' (only e4m3)");
  // Activations are quantized with power-of-two scales: checkpoints with other scales would be
  // run with numerics they were not made for.
  const std::string sf = q->string_or("scale_fmt", "");
  require(sf == "ue8m0", w, "scale_fmt '" + sf + "' (only ue8m0: power-of-two block scales)");
  const std::string act = q->string_or("activation_scheme", "dynamic");
  require(act == "dynamic", w, "activation_scheme '" + act + "' (only dynamic)");
  const json b = q->get_or("weight_block_size", json::array({128, 128}));
  require(b == json::array({128, 128}), w, "weight_block_size must be [128, 128]");
  c.fp8 = true;
}

void validate(const Config& c, const std::string& w) {
  auto pos = [&](int64_t v, const char* k) { require(v > 0, w, std::string(k) + " must be positive"); };
  pos(c.vocab_size, "vocab_size");
  pos(c.hidden_size, "hidden_size");
  pos(c.num_hidden_layers, "num_hidden_layers");
  pos(c.max_position_embeddings, "max_position_embeddings");
  pos(c.num_attention_heads, "num_attention_heads");
  pos(c.q_lora_rank, "q_lora_rank");
  pos(c.kv_lora_rank, "kv_lora_rank");
  pos(c.qk_nope_head_dim, "qk_nope_head_dim");
  pos(c.qk_rope_head_dim, "qk_rope_head_dim");
  pos(c.v_head_dim, "v_head_dim");
  pos(c.index_n_heads, "index_n_heads");
  pos(c.index_head_dim, "index_head_dim");
  pos(c.index_topk, "index_topk");
  pos(c.intermediate_size, "intermediate_size");
  pos(c.n_routed_experts, "n_routed_experts");
  pos(c.num_experts_per_tok, "num_experts_per_tok");
  pos(c.moe_intermediate_size, "moe_intermediate_size");
  pos(c.n_group, "n_group");
  pos(c.topk_group, "topk_group");
  require(c.n_shared_experts >= 0, w, "n_shared_experts must not be negative");
  require(c.num_experts_per_tok <= c.n_routed_experts, w, "num_experts_per_tok exceeds n_routed_experts");
  require(c.n_routed_experts % c.n_group == 0, w, "n_routed_experts must be a multiple of n_group");
  require(c.topk_group <= c.n_group, w, "topk_group exceeds n_group");
  require(c.num_experts_per_tok <= c.topk_group * (c.n_routed_experts / c.n_group), w,
          "num_experts_per_tok exceeds the experts of topk_group groups");
  require(c.n_group == 1 || c.n_routed_experts / c.n_group >= 2, w,
          "group-limited routing scores each group by its two best experts: groups need at least 2");
  require(c.first_k_dense_replace >= 0 && c.first_k_dense_replace <= c.num_hidden_layers, w,
          "first_k_dense_replace must be in [0, num_hidden_layers]");
  require(c.num_nextn_predict_layers == 0 || c.num_nextn_predict_layers == 1, w,
          "num_nextn_predict_layers must be 0 or 1");
  // The kernels' shapes: 128-wide FP8 blocks of the latent and the index key, even RoPE pairs.
  require(c.kv_lora_rank % 128 == 0, w, "kv_lora_rank must be a multiple of 128 (the latent's FP8 blocks)");
  require(c.index_head_dim == 128, w, "index_head_dim must be 128 (one FP8 block and one scale per index key)");
  require(c.qk_rope_head_dim % 16 == 0 && c.qk_rope_head_dim <= 512, w,
          "qk_rope_head_dim must be a multiple of 16 (the attention kernels' lanes) and at most 512");
  require(c.index_n_heads <= 256, w, "index_n_heads above 256 is not supported");
  require(c.kv_lora_rank <= 8192, w, "kv_lora_rank above 8192 is not supported");
  require(c.qk_rope_head_dim <= c.index_head_dim, w,
          "qk_rope_head_dim exceeds index_head_dim (the indexer ropes its first qk_rope_head_dim dims)");
  require(int64_t(c.indexer_types.size()) == c.num_hidden_layers, w,
          "indexer_types has " + std::to_string(c.indexer_types.size()) + " entries but num_hidden_layers is " +
              std::to_string(c.num_hidden_layers));
  for (const auto& t : c.indexer_types)
    require(t == "full" || t == "shared", w, "indexer_types entry '" + t + "' is neither full nor shared");
  require(c.indexer_types[0] == "full", w, "layer 0 must run its own indexer (a shared layer reuses an earlier one's)");
  if (c.yarn.on) {
    require(c.yarn.factor >= 1 && c.yarn.original_max_position_embeddings > 0, w,
            "YaRN needs factor >= 1 and original_max_position_embeddings");
    // transformers scales cos/sin by mscale(mscale) / mscale(mscale_all_dim); the published
    // configs make it 1, and strata does not apply it.
    require(c.yarn.mscale == c.yarn.mscale_all_dim, w, "YaRN with mscale != mscale_all_dim is not supported");
  }
  for (int64_t e : c.eos_token_ids) require(e >= 0 && e < c.vocab_size, w, "eos_token_id outside the vocabulary");
}

}  // namespace

int64_t Config::full_indexer_layers() const {
  int64_t n = 0;
  for (int64_t l = 0; l < num_hidden_layers; ++l) n += full_indexer(l);
  return n;
}

double Config::softmax_scale() const {
  double s = 1.0 / std::sqrt(double(qk_head_dim()));
  if (yarn.on && yarn.factor > 1) {
    const double m = 0.1 * yarn.mscale_all_dim * std::log(yarn.factor) + 1.0;
    s *= m * m;
  }
  return s;
}

Config parse_config(const json& j, const std::string& where) {
  require(j.is_object(), where, "not a JSON object");
  Config c;
  models::ConfigReader r(j, where, c.keys);
  const std::string& w = where;
  c.model_type = r.string("model_type");
  require(c.model_type == "deepseek_v32" || c.model_type == "glm_moe_dsa", w,
          "model_type '" + c.model_type + "' is not deepseek_v32 or glm_moe_dsa");
  c.architectures = r.metadata_or("architectures", c.architectures);
  // Settings of training, parallelism or caching that change nothing computed here.
  r.metadata({"ep_size", "use_cache", "aux_loss_alpha", "seq_aux", "pretraining_tp", "num_experts"});
  const std::string act = r.string_or("hidden_act", "silu");
  require(act == "silu", w, "hidden_act '" + act + "' (only silu)");
  require(!r.boolean_or("attention_bias", false), w, "attention_bias true is not supported (MLA has no biases)");
  require(!r.boolean_or("mlp_bias", false), w, "mlp_bias true is not supported");
  const std::string scoring = r.string_or("scoring_func", "sigmoid");
  require(scoring == "sigmoid", w, "scoring_func '" + scoring + "' (the DSA models route with sigmoid)");
  const std::string method = r.string_or("topk_method", "noaux_tc");
  require(method == "noaux_tc", w, "topk_method '" + method + "' (only noaux_tc: sigmoid + correction bias)");
  require(r.integer_or("moe_layer_freq", 1) == 1, w, "moe_layer_freq must be 1 (every layer after the dense ones is MoE)");

  c.vocab_size = r.integer("vocab_size");
  c.hidden_size = r.integer("hidden_size");
  c.num_hidden_layers = r.integer("num_hidden_layers");
  c.max_position_embeddings = r.integer("max_position_embeddings");
  c.num_nextn_predict_layers = r.integer_or("num_nextn_predict_layers", 0);
  c.rms_norm_eps = r.number_or("rms_norm_eps", c.glm() ? 1e-5 : 1e-6);
  c.num_attention_heads = r.integer("num_attention_heads");
  // MLA expands the latent to every head: kv heads are the heads.
  require(r.integer_or("num_key_value_heads", c.num_attention_heads) == c.num_attention_heads, w,
          "num_key_value_heads must equal num_attention_heads (MLA)");
  r.metadata({"head_dim"});  // transformers' alias of qk_rope_head_dim for its rotary class
  c.q_lora_rank = r.integer("q_lora_rank");
  c.kv_lora_rank = r.integer("kv_lora_rank");
  c.qk_nope_head_dim = r.integer("qk_nope_head_dim");
  c.qk_rope_head_dim = r.integer("qk_rope_head_dim");
  c.v_head_dim = r.integer("v_head_dim");
  read_rope(r, c, w);
  c.index_n_heads = r.integer("index_n_heads");
  c.index_head_dim = r.integer("index_head_dim");
  c.index_topk = r.integer("index_topk");
  // DeepSeek-V3.2 ropes its indexer half-split (the 2025-11-18 fix), GLM-5 interleaved.
  c.indexer_rope_interleave = r.boolean_or("indexer_rope_interleave", c.glm());
  if (c.glm()) {
    c.indexer_types = glm_indexer_types(r, c.num_hidden_layers, w);
    if (r.has("layer_types"))
      for (const auto& t : r.get<std::vector<std::string>>("layer_types"))
        require(t == "deepseek_sparse_attention", w, "layer_types entry '" + t + "' (every layer is deepseek_sparse_attention)");
  } else {
    c.indexer_types.assign(size_t(std::max<int64_t>(c.num_hidden_layers, 0)), "full");
  }
  c.intermediate_size = r.integer("intermediate_size");
  c.first_k_dense_replace = r.integer_or("first_k_dense_replace", 0);
  if (r.has("mlp_layer_types")) {
    const auto t = r.get<std::vector<std::string>>("mlp_layer_types");
    require(int64_t(t.size()) == c.num_hidden_layers, w, "mlp_layer_types has the wrong length");
    for (int64_t l = 0; l < c.num_hidden_layers; ++l)
      require(t[size_t(l)] == (l < c.first_k_dense_replace ? "dense" : "sparse"), w,
              "mlp_layer_types must be first_k_dense_replace dense layers, then sparse ones");
  }
  c.n_routed_experts = r.integer("n_routed_experts");
  c.n_shared_experts = r.integer_or("n_shared_experts", 0);
  c.num_experts_per_tok = r.integer("num_experts_per_tok");
  c.moe_intermediate_size = r.integer("moe_intermediate_size");
  c.n_group = r.integer_or("n_group", 1);
  c.topk_group = r.integer_or("topk_group", 1);
  c.norm_topk_prob = r.boolean_or("norm_topk_prob", true);
  c.routed_scaling_factor = r.number_or("routed_scaling_factor", 1.0);
  read_quantization(r, c);
  c.tie_word_embeddings = r.boolean_or("tie_word_embeddings", false);
  require(!c.tie_word_embeddings, w, "tie_word_embeddings must be false (the DSA models have their own head)");
  if (const json b = r.metadata_or<json>("bos_token_id", nullptr); b.is_number_integer()) c.bos_token_id = b.get<int64_t>();
  c.eos_token_ids = r.ids_or_empty("eos_token_id");
  c.strata_random_weights = r.metadata_or("strata_random_weights", false);
  c.keys.finish();
  validate(c, w);
  return c;
}

nlohmann::ordered_json to_json(const Config& c) {
  nlohmann::ordered_json j;
  j["architectures"] = c.architectures.empty()
                           ? nlohmann::ordered_json::array({c.glm() ? "GlmMoeDsaForCausalLM" : "DeepseekV32ForCausalLM"})
                           : nlohmann::ordered_json(c.architectures);
  j["model_type"] = c.model_type;
  j["attention_bias"] = false;
  if (c.bos_token_id >= 0) j["bos_token_id"] = c.bos_token_id;
  if (c.eos_token_ids.size() == 1) j["eos_token_id"] = c.eos_token_ids[0];
  else if (!c.eos_token_ids.empty()) j["eos_token_id"] = c.eos_token_ids;
  j["first_k_dense_replace"] = c.first_k_dense_replace;
  j["hidden_act"] = "silu";
  j["hidden_size"] = c.hidden_size;
  j["index_head_dim"] = c.index_head_dim;
  j["index_n_heads"] = c.index_n_heads;
  j["index_topk"] = c.index_topk;
  if (c.glm()) j["indexer_types"] = c.indexer_types;
  j["intermediate_size"] = c.intermediate_size;
  j["kv_lora_rank"] = c.kv_lora_rank;
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["moe_intermediate_size"] = c.moe_intermediate_size;
  j["n_group"] = c.n_group;
  j["n_routed_experts"] = c.n_routed_experts;
  j["n_shared_experts"] = c.n_shared_experts;
  j["norm_topk_prob"] = c.norm_topk_prob;
  j["num_attention_heads"] = c.num_attention_heads;
  j["num_experts_per_tok"] = c.num_experts_per_tok;
  j["num_hidden_layers"] = c.num_hidden_layers;
  j["num_key_value_heads"] = c.num_attention_heads;
  j["num_nextn_predict_layers"] = c.num_nextn_predict_layers;
  j["q_lora_rank"] = c.q_lora_rank;
  j["qk_nope_head_dim"] = c.qk_nope_head_dim;
  j["qk_rope_head_dim"] = c.qk_rope_head_dim;
  if (c.fp8)
    j["quantization_config"] = {{"activation_scheme", "dynamic"}, {"fmt", "e4m3"}, {"quant_method", "fp8"},
                                {"scale_fmt", "ue8m0"}, {"weight_block_size", {128, 128}}};
  j["rms_norm_eps"] = c.rms_norm_eps;
  nlohmann::ordered_json yarn = {{"beta_fast", c.yarn.beta_fast}, {"beta_slow", c.yarn.beta_slow},
                                 {"factor", c.yarn.factor}, {"mscale", c.yarn.mscale},
                                 {"mscale_all_dim", c.yarn.mscale_all_dim},
                                 {"original_max_position_embeddings", c.yarn.original_max_position_embeddings}};
  if (c.glm()) {
    nlohmann::ordered_json rp = {{"rope_type", c.yarn.on ? "yarn" : "default"}, {"rope_theta", c.rope_theta}};
    if (c.yarn.on) rp.update(yarn);
    j["rope_parameters"] = rp;
  } else {
    if (c.yarn.on) {
      yarn["type"] = "yarn";
      j["rope_scaling"] = yarn;
    }
    j["rope_theta"] = c.rope_theta;
  }
  j["routed_scaling_factor"] = c.routed_scaling_factor;
  j["scoring_func"] = "sigmoid";
  j["tie_word_embeddings"] = false;
  j["topk_group"] = c.topk_group;
  j["topk_method"] = "noaux_tc";
  j["torch_dtype"] = "bfloat16";
  j["v_head_dim"] = c.v_head_dim;
  j["vocab_size"] = c.vocab_size;
  if (c.strata_random_weights) j["strata_random_weights"] = true;
  return j;
}

cache::CacheLayout cache_layout(const Config& c, const models::CacheOptions& o) {
  if (o.fp4_index_keys) throw Error("FP4 index keys are a DeepSeek-V4 option; the DSA models store FP8 index keys");
  cache::CacheLayout L;
  L.block_tokens = 64;
  const std::string latent_fmt = std::to_string(c.kv_lora_rank) + " e4m3 + " + std::to_string(c.kv_lora_rank / 128) +
                                 " fp32 + " + std::to_string(c.qk_rope_head_dim) + " bf16";
  const std::string index_fmt =
      std::to_string(c.index_head_dim) + " e4m3 + " + std::to_string(c.index_head_dim / 128) + " fp32";
  const int64_t layers = o.include_mtp ? c.layers_with_mtp() : c.num_hidden_layers;
  for (int64_t l = 0; l < layers; ++l) {
    L.specs.push_back({cache::CacheKind::mla_latent, l, c.latent_entry_bytes(), 0, 1, latent_fmt});
    if (c.full_indexer(l)) L.specs.push_back({cache::CacheKind::indexer_keys, l, c.index_entry_bytes(), 0, 1, index_fmt});
  }
  return L;
}

}  // namespace strata::dsa
