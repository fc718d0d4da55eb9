#include "models/config_keys.h"

#include <algorithm>
#include <cstdio>

#include "io/json_file.h"

namespace strata::models {
using nlohmann::json;

namespace {

// What transformers' PretrainedConfig writes into every config it saves (nested ones
// included), none of which changes a forward pass: generation defaults, labels, the
// export's own bookkeeping; and strata's own mark on make-model's random checkpoints.
const std::set<std::string>& common_attributes() {
  static const std::set<std::string> k = {
      "_attn_implementation_autoset", "_commit_hash", "_name_or_path", "add_cross_attention", "architectures",
      "attention_dropout", "auto_map", "bad_words_ids", "begin_suppress_tokens", "bos_token_id",
      "chunk_size_feed_forward", "cross_attention_hidden_size", "decoder_start_token_id", "diversity_penalty",
      "do_sample", "dtype", "early_stopping", "encoder_no_repeat_ngram_size", "exponential_decay_length_penalty",
      "finetuning_task", "forced_bos_token_id", "forced_eos_token_id", "id2label", "initializer_range", "is_decoder",
      "is_encoder_decoder", "label2id", "length_penalty", "max_length", "min_length", "no_repeat_ngram_size",
      "num_beam_groups", "num_beams", "num_return_sequences", "output_attentions", "output_hidden_states",
      "output_scores", "pad_token_id", "prefix", "problem_type", "pruned_heads", "remove_invalid_values",
      "repetition_penalty", "return_dict", "return_dict_in_generate", "sep_token_id", "strata_random_weights",
      "suppress_tokens", "task_specific_params", "temperature", "tf_legacy_loss", "tie_encoder_decoder",
      "tokenizer_class", "top_k", "top_p", "torch_dtype", "torchscript", "transformers_version", "typical_p",
      "use_bfloat16", "use_cache"};
  return k;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> d(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) d[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = d[0];
    d[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = d[j];
      d[j] = std::min({d[j] + 1, d[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
      diag = up;
    }
  }
  return d[b.size()];
}

// The closest of `candidates` within two edits of `key`, "" if none. Keys under five letters
// are too short to tell a misspelling from another word.
std::string nearest(const std::string& key, const std::set<std::string>& candidates) {
  if (key.size() < 5) return "";
  std::string best;
  size_t best_d = 3;
  for (const auto& c : candidates) {
    const size_t d = edit_distance(key, c);
    if (d < best_d) best = c, best_d = d;
  }
  return best;
}

}  // namespace

void ConfigKeys::finish() {
  const std::string where = objects_.empty() ? std::string("config.json") : objects_[0].where;
  std::string list;
  for (const Object& o : objects_) {
    std::set<std::string> known = o.metadata;
    if (o.is_config) known.insert(common_attributes().begin(), common_attributes().end());
    for (const auto& [key, value] : o.json->items()) {
      if (o.settings.count(key) || known.count(key)) continue;
      if (const std::string s = nearest(key, o.settings); !s.empty())
        throw Error(o.where + ": unknown key '" + key + "' (did you mean '" + s + "'?)");
      unknown_.push_back(o.path + key);
      list += (list.empty() ? "'" : ", '") + o.path + key + "'";
      if (const std::string s = nearest(key, known); !s.empty()) list += " (did you mean '" + o.path + s + "'?)";
    }
  }
  objects_.clear();  // they point into the parsed JSON, which the caller is about to drop
  if (list.empty()) return;
  warning_ = "strata: warning: " + where + ": unknown keys ignored: " + list;
  std::fprintf(stderr, "%s\n", warning_.c_str());
}

ConfigReader::ConfigReader(const json& config, const std::string& where, ConfigKeys& keys)
    : ConfigReader(config, "", where, true, keys) {}

ConfigReader::ConfigReader(const json& obj, std::string path, std::string where, bool config, ConfigKeys& keys)
    : obj_(&obj), keys_(&keys), index_(keys.objects_.size()) {
  if (!obj.is_object()) throw Error(where + " must be an object");
  keys.objects_.push_back({&obj, std::move(path), std::move(where), config, {}, {}});
}

bool ConfigReader::has(const char* key) const { return obj_->contains(key) && !(*obj_)[key].is_null(); }

void ConfigReader::setting(const char* key) { keys_->objects_[index_].settings.insert(key); }

void ConfigReader::record(const char* key, json value, bool from_file) {
  keys_->optional_.push_back({keys_->objects_[index_].path + key, std::move(value), from_file});
}

void ConfigReader::missing(const char* key) const {
  std::string msg = where() + ": missing key '" + key + "'";
  const auto& o = keys_->objects_[index_];
  for (const auto& [k, v] : obj_->items())
    if (k.size() >= 5 && !o.settings.count(k) && !o.metadata.count(k) && edit_distance(k, key) <= 2) {
      msg += " (is '" + k + "' a misspelling?)";
      break;
    }
  throw Error(msg);
}

void ConfigReader::wrong_type(const char* key) const {
  throw Error(where() + ": key '" + key + "' has the wrong type");
}

int64_t ConfigReader::integer(const char* key) {
  setting(key);
  if (!has(key)) missing(key);
  return json_int(*obj_, key, where());
}

double ConfigReader::number(const char* key) {
  setting(key);
  if (!has(key)) missing(key);
  return json_number(*obj_, key, where());
}

std::string ConfigReader::string(const char* key) {
  setting(key);
  if (!has(key)) missing(key);
  return json_string(*obj_, key, where());
}

int64_t ConfigReader::integer_or(const char* key, int64_t fallback) {
  const bool from_file = has(key);
  const int64_t v = from_file ? integer(key) : fallback;
  setting(key);
  record(key, v, from_file);
  return v;
}

double ConfigReader::number_or(const char* key, double fallback) {
  const bool from_file = has(key);
  const double v = from_file ? number(key) : fallback;
  setting(key);
  record(key, v, from_file);
  return v;
}

bool ConfigReader::boolean_or(const char* key, bool fallback) {
  setting(key);
  const bool from_file = has(key);
  const bool v = from_file ? json_bool(*obj_, key, where()) : fallback;
  record(key, v, from_file);
  return v;
}

std::string ConfigReader::string_or(const char* key, const std::string& fallback) {
  const bool from_file = has(key);
  std::string v = from_file ? string(key) : fallback;
  setting(key);
  record(key, v, from_file);
  return v;
}

std::vector<int64_t> ConfigReader::ids_or_empty(const char* key) {
  const nlohmann::json e = get_or<nlohmann::json>(key, nullptr);
  if (e.is_null()) return {};
  try {
    if (e.is_array()) return e.get<std::vector<int64_t>>();
    return {e.get<int64_t>()};
  } catch (const nlohmann::json::exception&) {
    wrong_type(key);
  }
}

ConfigReader ConfigReader::object(const char* key, bool config) {
  setting(key);
  if (!has(key)) missing(key);
  // copies: the new reader's entry may move this one's
  std::string path = keys_->objects_[index_].path + key + ".", where = this->where() + ": " + key;
  return ConfigReader((*obj_)[key], std::move(path), std::move(where), config, *keys_);
}

std::optional<ConfigReader> ConfigReader::optional_object(const char* key, const json& fallback, bool config) {
  setting(key);
  if (!has(key)) {
    record(key, fallback, false);
    return std::nullopt;
  }
  return object(key, config);  // its keys are listed one by one
}

void ConfigReader::metadata(std::initializer_list<const char*> keys) {
  for (const char* k : keys) keys_->objects_[index_].metadata.insert(k);
}

}  // namespace strata::models
