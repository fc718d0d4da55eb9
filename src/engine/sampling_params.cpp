#include "engine/sampling_params.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace strata {

namespace {

// Written as !(lo <= x && x <= hi) so that NaN is rejected too.
bool in_closed(double x, double lo, double hi) { return lo <= x && x <= hi; }

const char* mode_name(LogprobsMode m) { return m == LogprobsMode::raw ? "raw" : "processed"; }

double get_number(const nlohmann::json& v, const char* name) {
  if (!v.is_number()) throw Error(std::string(name) + " must be a number");
  return v.get<double>();
}

int64_t get_integer(const nlohmann::json& v, const char* name) {
  if (!v.is_number_integer()) throw Error(std::string(name) + " must be an integer");
  if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX))
    throw Error(std::string(name) + " is too large");
  return v.get<int64_t>();
}

}  // namespace

void SamplingParams::validate() const {
  if (!in_closed(temperature, 0.0, 2.0)) throw Error("temperature must be in [0, 2]");
  if (top_k < -1) throw Error("top_k must be at least 1, or 0 or -1 to disable it");
  if (!(top_p > 0.0 && top_p <= 1.0)) throw Error("top_p must be in (0, 1]");
  if (!in_closed(min_p, 0.0, 1.0)) throw Error("min_p must be in [0, 1]");
  if (!(repetition_penalty > 0.0 && std::isfinite(repetition_penalty)))
    throw Error("repetition_penalty must be a finite number greater than 0");
  if (!in_closed(presence_penalty, -2.0, 2.0)) throw Error("presence_penalty must be in [-2, 2]");
  if (!in_closed(frequency_penalty, -2.0, 2.0)) throw Error("frequency_penalty must be in [-2, 2]");
  if (max_tokens && *max_tokens < 1) throw Error("max_tokens must be at least 1");
  for (const auto& s : stop)
    if (s.empty()) throw Error("stop strings must not be empty");
  for (int32_t t : stop_token_ids)
    if (t < 0) throw Error("stop_token_ids must not contain negative ids");
  if (logprobs && !(*logprobs >= 0 && *logprobs <= kMaxLogprobs))
    throw Error("logprobs must be in [0, 20]");
  validate_logit_bias(logit_bias);
}

void to_json(nlohmann::json& j, const SamplingParams& p) {
  j = nlohmann::json{{"temperature", p.temperature},
                     {"top_k", p.top_k},
                     {"top_p", p.top_p},
                     {"min_p", p.min_p},
                     {"repetition_penalty", p.repetition_penalty},
                     {"presence_penalty", p.presence_penalty},
                     {"frequency_penalty", p.frequency_penalty},
                     {"max_tokens", nullptr},
                     {"stop", p.stop},
                     {"stop_token_ids", p.stop_token_ids},
                     {"ignore_eos", p.ignore_eos},
                     {"seed", nullptr},
                     {"logprobs", nullptr},
                     {"logprobs_mode", mode_name(p.logprobs_mode)},
                     {"logit_bias", logit_bias_to_json(p.logit_bias)}};
  if (p.max_tokens) j["max_tokens"] = *p.max_tokens;
  if (p.seed) j["seed"] = *p.seed;
  if (p.logprobs) j["logprobs"] = *p.logprobs;
  if (p.structured)
    j["structured_output"] = {{"json_schema", p.structured->json_schema},
                              {"tool_calls", p.structured->tool_calls},
                              {"after_token", p.structured->after_token}};
}

void from_json(const nlohmann::json& j, SamplingParams& p) {
  if (!j.is_object()) throw Error("sampling parameters must be a JSON object");
  p = SamplingParams{};
  auto field = [&](const char* name) -> const nlohmann::json* {
    auto it = j.find(name);
    return it == j.end() || it->is_null() ? nullptr : &*it;
  };
  if (auto v = field("temperature")) p.temperature = get_number(*v, "temperature");
  if (auto v = field("top_k")) {
    int64_t k = get_integer(*v, "top_k");
    if (k < -1 || k > INT32_MAX) throw Error("top_k must be at least 1, or 0 or -1 to disable it");
    p.top_k = int32_t(k);
  }
  if (auto v = field("top_p")) p.top_p = get_number(*v, "top_p");
  if (auto v = field("min_p")) p.min_p = get_number(*v, "min_p");
  if (auto v = field("repetition_penalty")) p.repetition_penalty = get_number(*v, "repetition_penalty");
  if (auto v = field("presence_penalty")) p.presence_penalty = get_number(*v, "presence_penalty");
  if (auto v = field("frequency_penalty")) p.frequency_penalty = get_number(*v, "frequency_penalty");
  if (auto v = field("max_tokens")) p.max_tokens = get_integer(*v, "max_tokens");
  if (auto v = field("stop")) {
    if (v->is_string()) {
      p.stop = {v->get<std::string>()};
    } else if (v->is_array()) {
      for (const auto& s : *v) {
        if (!s.is_string()) throw Error("stop must be a string or an array of strings");
        p.stop.push_back(s.get<std::string>());
      }
    } else {
      throw Error("stop must be a string or an array of strings");
    }
  }
  if (auto v = field("stop_token_ids")) {
    if (!v->is_array()) throw Error("stop_token_ids must be an array of integers");
    for (const auto& t : *v) {
      int64_t id = get_integer(t, "stop_token_ids");
      if (id < 0 || id > INT32_MAX) throw Error("stop_token_ids must not contain negative ids");
      p.stop_token_ids.push_back(int32_t(id));
    }
  }
  if (auto v = field("ignore_eos")) {
    if (!v->is_boolean()) throw Error("ignore_eos must be a boolean");
    p.ignore_eos = v->get<bool>();
  }
  if (auto v = field("seed")) {
    if (!v->is_number_integer()) throw Error("seed must be an integer");
    // OpenAI seeds are signed 64-bit; a negative seed is used as its two's complement bits.
    p.seed = v->is_number_unsigned() ? v->get<uint64_t>() : uint64_t(v->get<int64_t>());
  }
  if (auto v = field("logprobs")) {
    int64_t n = get_integer(*v, "logprobs");
    if (n < 0 || n > kMaxLogprobs) throw Error("logprobs must be in [0, 20]");
    p.logprobs = int(n);
  }
  if (auto v = field("logprobs_mode")) {
    std::string m = v->is_string() ? v->get<std::string>() : "";
    if (m == "raw") p.logprobs_mode = LogprobsMode::raw;
    else if (m == "processed") p.logprobs_mode = LogprobsMode::processed;
    else throw Error("logprobs_mode must be \"raw\" or \"processed\"");
  }
  if (auto v = field("logit_bias")) p.logit_bias = logit_bias_from_json(*v);
  if (auto v = field("structured_output")) {
    auto text = [&](const char* key) {
      if (!v->contains(key)) return std::string();
      if (!(*v)[key].is_string()) throw Error(std::string("structured_output.") + key + " must be a string");
      return (*v)[key].get<std::string>();
    };
    if (!v->is_object()) throw Error("structured_output must be an object");
    StructuredOutput so;
    so.json_schema = text("json_schema");
    so.tool_calls = text("tool_calls");
    if (so.json_schema.empty() == so.tool_calls.empty())
      throw Error("structured_output needs exactly one of json_schema and tool_calls");
    if (v->contains("after_token")) {
      const int64_t t = get_integer((*v)["after_token"], "structured_output.after_token");
      if (t < -1 || t > INT32_MAX) throw Error("structured_output.after_token must be a token id or -1");
      so.after_token = int32_t(t);
    }
    p.structured = std::move(so);
  }
  p.validate();
}

}  // namespace strata
