#include "server/openai_request.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/json_file.h"
#include "server/api_error.h"
#include "server/json_field.h"
#include "server/random_seed.h"
#include "server/forced_tool_call.h"
#include "server/response_format.h"
#include "server/unsupported_fields.h"
#include "text/chat_format.h"
#include "text/tokenizer.h"

namespace strata::server {
namespace {

using ojson = nlohmann::ordered_json;



bool get_bool(const ojson& j, const char* name, bool def) {
  const ojson* v = field(j, name);
  if (!v) return def;
  if (!v->is_boolean()) throw bad_request(std::string("'") + name + "' must be a boolean.", name);
  return v->get<bool>();
}

int64_t get_int(const ojson& v, const char* name) {
  if (const auto i = json_exact_int(v)) return *i;
  throw bad_request(std::string("'") + name + "' must be an integer.", name);
}

// The first word of a SamplingParams message is the field it is about.
std::string param_of(const std::string& msg) {
  size_t end = msg.find_first_of(" '\"");
  return msg.substr(0, end);
}

std::string check_model(const ojson& j, const ModelInfo& m) {
  const ojson* v = field(j, "model");
  if (!v) return m.id;  // a single-model server: the model may be left out
  if (!v->is_string()) throw bad_request("'model' must be a string.", "model");
  std::string name = v->get<std::string>();
  if (name != m.id) throw model_not_found(name);
  return name;
}

// The OpenAI sampling fields that SamplingParams reads, copied so that endpoint-specific
// fields with the same name (chat's boolean "logprobs") never reach it.
SamplingParams parse_sampling(const ojson& j, const char* max_tokens_field, const ModelInfo& m) {
  nlohmann::json s = nlohmann::json::object();
  for (const char* k : {"temperature", "top_p", "top_k", "min_p", "repetition_penalty", "presence_penalty",
                        "frequency_penalty", "stop", "seed", "ignore_eos", "stop_token_ids", "logit_bias"})
    if (const ojson* v = field(j, k)) s[k] = nlohmann::json::parse(v->dump());
  if (const ojson* v = field(j, max_tokens_field)) s["max_tokens"] = nlohmann::json::parse(v->dump());
  SamplingParams p;
  try {
    from_json(s, p);
    p.validate();
  } catch (const Error& e) {
    std::string msg = e.what();
    std::string param = param_of(msg);
    if (param == "max_tokens") param = max_tokens_field;
    throw bad_request(msg, s.contains(param) || param == max_tokens_field ? param : "");
  }
  if (!p.seed) p.seed = random_seed();
  // Here rather than in the engine, so that the client learns which field holds the bad id.
  for (const auto& [id, bias] : p.logit_bias)
    if (id >= m.vocab_size)
      throw bad_request("logit_bias names token " + std::to_string(id) + ", outside the vocabulary (valid ids are 0 to " +
                            std::to_string(m.vocab_size - 1) + ").",
                        "logit_bias", "invalid_token_id");
  return p;
}

void common_fields(const ojson& j, ApiRequest& r, const ModelInfo& m) {
  r.model = check_model(j, m);
  if (const ojson* v = field(j, "n")) {
    int64_t n = get_int(*v, "n");
    if (n < 1 || n > m.max_n)
      throw bad_request("'n' must be between 1 and " + std::to_string(m.max_n) + ".", "n");
    r.n = int(n);
  }
  check_unsupported_fields(j, r.endpoint, r.n);
  r.stream = get_bool(j, "stream", false);
  if (const ojson* v = field(j, "stream_options")) {
    if (!v->is_object()) throw bad_request("'stream_options' must be an object.", "stream_options");
    if (!r.stream) throw bad_request("'stream_options' is only allowed when 'stream' is true.", "stream_options");
    r.include_usage = get_bool(*v, "include_usage", false);
  }
}

// Bounds max_tokens by the context left after the longest prompt; a request that cannot fit
// is answered here, with OpenAI's context_length_exceeded.
void check_context(ApiRequest& r, const ModelInfo& m, const char* prompt_field, const char* max_field) {
  size_t longest = 0;
  for (const auto& p : r.prompts) longest = std::max(longest, p.size());
  const int64_t plen = int64_t(longest);
  if (plen >= m.max_context)
    throw bad_request("This model's maximum context length is " + std::to_string(m.max_context) +
                          " tokens. However, your prompt has " + std::to_string(plen) +
                          " tokens. Please reduce the length of the prompt.",
                      prompt_field, "context_length_exceeded");
  auto& mt = r.sampling.max_tokens;
  if (mt && *mt < 1) throw bad_request("'" + std::string(max_field) + "' must be at least 1.", max_field);
  if (mt && plen + *mt > m.max_context)
    throw bad_request("This model's maximum context length is " + std::to_string(m.max_context) +
                          " tokens. However, you requested " + std::to_string(plen + *mt) + " tokens (" +
                          std::to_string(plen) + " in the prompt, " + std::to_string(*mt) +
                          " in the completion). Please reduce the length of the prompt or completion.",
                      max_field, "context_length_exceeded");
  if (!mt) mt = m.max_context - plen;
}

// OpenAI content may be a string or an array of parts; the encoding takes text.
void normalize_content(ojson& msg, size_t i) {
  auto it = msg.find("content");
  if (it == msg.end() || !it->is_array()) return;
  std::string text;
  for (size_t k = 0; k < it->size(); ++k) {
    const auto& part = (*it)[k];
    const std::string where = "messages[" + std::to_string(i) + "].content[" + std::to_string(k) + "]";
    const std::string type = part.is_object() && part.contains("type") && part["type"].is_string() ? part["type"].get<std::string>() : "";
    if (type == "image_url" || type == "input_image" || type == "image" || type == "video_url" || type == "input_audio")
      throw bad_request(where + ": '" + type + "' content is not supported: strata serves the text model only " +
                            "(a checkpoint's vision tower is not loaded). Send text parts.",
                        "messages");
    if (type != "text" || !part.contains("text") || !part["text"].is_string())
      throw bad_request(where + ": only text parts ({\"type\": \"text\", \"text\": ...}) are supported.", "messages");
    text += part["text"].get<std::string>();
  }
  *it = text;
}

void check_effort(const std::string& e) {
  if (e != "minimal" && e != "low" && e != "medium" && e != "high" && e != "max")
    throw bad_request("'reasoning_effort' must be one of low, medium, high, max.", "reasoning_effort");
}

}  // namespace

ojson parse_json_body(std::string_view body) {
  ojson j;
  try {
    j = ojson::parse(body.begin(), body.end());
  } catch (const nlohmann::json::exception& e) {
    // nlohmann's message names the byte offset, which is what a client needs to find it
    throw bad_request(std::string("We could not parse the JSON body of your request: ") + e.what());
  }
  if (!j.is_object()) throw bad_request("The request body must be a JSON object.");
  return j;
}

SamplingParams ApiRequest::sampling_for(size_t choice) const {
  SamplingParams p = sampling;
  if (p.seed) p.seed = *p.seed + uint64_t(choice % size_t(n));
  if (top_logprobs >= 0) p.logprobs = top_logprobs;
  return p;
}

ApiRequest parse_chat_request(std::string_view body, const ModelInfo& m) {
  ojson j = parse_json_body(body);
  ApiRequest r;
  r.endpoint = Endpoint::chat;
  common_fields(j, r, m);

  const ojson* msgs = field(j, "messages");
  if (!msgs) throw bad_request("'messages' is a required property.", "messages");
  if (!msgs->is_array()) throw bad_request("'messages' must be an array.", "messages");
  if (msgs->empty()) throw bad_request("'messages' must contain at least one message.", "messages", "empty_array");
  ojson messages = *msgs;
  for (size_t i = 0; i < messages.size(); ++i) {
    if (!messages[i].is_object()) throw bad_request("messages[" + std::to_string(i) + "] must be an object.", "messages");
    normalize_content(messages[i], i);
  }

  ojson tools = nullptr;
  if (const ojson* t = field(j, "tools")) {
    if (!t->is_array()) throw bad_request("'tools' must be an array.", "tools");
    for (const auto& tool : *t)
      if (!tool.is_object() || tool.value("type", "") != "function" || !tool.contains("function") ||
          !tool["function"].is_object() || !tool["function"].contains("name") || !tool["function"]["name"].is_string())
        throw bad_request("Each tool must be {\"type\": \"function\", \"function\": {\"name\": ...}}.", "tools");
    if (!t->empty()) tools = *t;
  }
  // A forced call ("required", or a named function) decodes under the tool-call grammar of
  // the tools it may call (tool_call_grammar.h).
  ojson forced = nullptr;
  if (const ojson* tc = field(j, "tool_choice")) {
    if (tc->is_string()) {
      std::string c = tc->get<std::string>();
      if (c != "none" && c != "auto" && c != "required")
        throw bad_request("'tool_choice' must be none, auto, required or a named function.", "tool_choice");
      if (c == "none") tools = nullptr;
      else if (c == "required" && tools.is_null())
        throw bad_request("'tool_choice' is required but no tools were given.", "tool_choice");
      else if (c == "required") forced = tools;
    } else if (tc->is_object()) {
      std::string name = tc->contains("function") && (*tc)["function"].is_object()
                             ? (*tc)["function"].value("name", "")
                             : std::string();
      if (!tools.is_null())
        for (const auto& tool : tools)
          if (tool["function"]["name"] == name) forced = ojson::array({tool});
      if (forced.is_null()) throw bad_request("'tool_choice' names a function that is not in 'tools'.", "tool_choice");
    } else {
      throw bad_request("'tool_choice' must be a string or an object.", "tool_choice");
    }
  }

  // Thinking switch: explicit flags win; a reasoning_effort alone asks for thinking.
  ChatRenderOptions ro;
  if (const ojson* e = field(j, "reasoning_effort")) {
    if (!e->is_string()) throw bad_request("'reasoning_effort' must be a string.", "reasoning_effort");
    ro.reasoning_effort = e->get<std::string>();
    check_effort(ro.reasoning_effort);
  }
  bool thinking = !ro.reasoning_effort.empty();
  if (const ojson* k = field(j, "chat_template_kwargs")) {
    if (!k->is_object()) throw bad_request("'chat_template_kwargs' must be an object.", "chat_template_kwargs");
    thinking = get_bool(*k, "enable_thinking", thinking);
    thinking = get_bool(*k, "thinking", thinking);
    ro.template_kwargs = *k;
  }
  ro.thinking = get_bool(j, "thinking", thinking);

  r.sampling = parse_sampling(j, field(j, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens", m);
  const bool logprobs = get_bool(j, "logprobs", false);
  if (const ojson* v = field(j, "top_logprobs")) {
    int64_t k = get_int(*v, "top_logprobs");
    if (k < 0 || k > kMaxLogprobs)
      throw bad_request("'top_logprobs' must be between 0 and " + std::to_string(kMaxLogprobs) + ".", "top_logprobs");
    if (!logprobs) throw bad_request("'top_logprobs' requires 'logprobs' to be true.", "top_logprobs");
    r.top_logprobs = int(k);
  } else if (logprobs) {
    r.top_logprobs = 0;
  }

  if (!m.chat_format)
    throw bad_request("This model has no chat template, so it serves no chat completions; use /v1/completions.",
                      "messages");
  std::string text;
  try {
    text = m.chat_format->render(messages, tools, ro);
  } catch (const Error& e) {
    throw bad_request(e.what(), "messages");
  }
  r.thinking = m.chat_format->output_starts_in_reasoning(text, ro);
  r.sampling.structured = parse_response_format(j);
  if (!forced.is_null()) {
    if (r.sampling.structured)
      throw unsupported_value("tool_choice", "'tool_choice' that forces a call cannot be combined with a JSON "
                                             "'response_format': the output is either the calls or the JSON.");
    r.sampling.structured = forced_tool_calls(forced, m.chat_format->tool_call_syntax());
  }
  if (r.sampling.structured && r.thinking) start_after_reasoning(*r.sampling.structured, *m.tokenizer);
  r.prompts.push_back(m.tokenizer->encode(text));
  check_context(r, m, "messages", field(j, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens");
  return r;
}

ApiRequest parse_completion_request(std::string_view body, const ModelInfo& m) {
  ojson j = parse_json_body(body);
  ApiRequest r;
  r.endpoint = Endpoint::completions;
  common_fields(j, r, m);

  const ojson* p = field(j, "prompt");
  if (!p) throw bad_request("'prompt' is a required property.", "prompt");
  auto ids_of = [&](const ojson& arr) {
    std::vector<int32_t> ids;
    for (const auto& v : arr) {
      if (!v.is_number_integer()) throw bad_request("Token prompts must contain integers only.", "prompt");
      int64_t id = v.get<int64_t>();
      if (id < 0 || id >= m.vocab_size)
        throw bad_request("Token id " + std::to_string(id) + " is out of vocabulary (valid ids are 0 to " +
                              std::to_string(m.vocab_size - 1) + ").",
                          "prompt", "invalid_token_id");
      ids.push_back(int32_t(id));
    }
    if (ids.empty()) throw bad_request("The prompt must not be empty.", "prompt");
    return ids;
  };
  auto text_of = [&](const ojson& s) {
    std::vector<int32_t> ids = m.tokenizer->encode(s.get<std::string>(), /*add_special=*/true);
    if (ids.empty()) throw bad_request("The prompt must not be empty.", "prompt");
    return ids;
  };
  if (p->is_string()) {
    r.prompts.push_back(text_of(*p));
  } else if (p->is_array() && !p->empty() && (*p)[0].is_number()) {
    r.prompts.push_back(ids_of(*p));
  } else if (p->is_array() && !p->empty()) {
    for (const auto& e : *p) {
      if (e.is_string()) r.prompts.push_back(text_of(e));
      else if (e.is_array()) r.prompts.push_back(ids_of(e));
      else throw bad_request("'prompt' must be a string, an array of strings, or token ids.", "prompt");
    }
  } else {
    throw bad_request(p->is_array() ? "The prompt must not be empty."
                                    : "'prompt' must be a string, an array of strings, or token ids.",
                      "prompt");
  }
  if (r.prompts.size() * size_t(r.n) > size_t(m.max_n))
    throw bad_request("Too many choices: prompts x n must be at most " + std::to_string(m.max_n) + ".", "n");

  r.sampling = parse_sampling(j, "max_tokens", m);
  if (!field(j, "max_tokens")) r.sampling.max_tokens = 16;  // OpenAI's default for completions
  r.sampling.structured = parse_response_format(j);  // vLLM's extension of completions
  if (const ojson* v = field(j, "logprobs")) {
    int64_t k = get_int(*v, "logprobs");
    if (k < 0 || k > kMaxLogprobs)
      throw bad_request("'logprobs' must be between 0 and " + std::to_string(kMaxLogprobs) + ".", "logprobs");
    r.top_logprobs = int(k);
  }
  r.echo = get_bool(j, "echo", false);
  if (r.echo && r.top_logprobs >= 0)
    throw unsupported_value("echo", "'echo' together with 'logprobs' is not supported: the prompt's logprobs "
                                    "are not computed.");
  if (r.echo) {
    // A text prompt is echoed as sent; token ids as their text.
    if (p->is_string()) r.prompt_texts.push_back(p->get<std::string>());
    else if (p->is_array() && (*p)[0].is_number()) r.prompt_texts.push_back(m.tokenizer->decode(r.prompts[0]));
    else
      for (size_t i = 0; i < p->size(); ++i)
        r.prompt_texts.push_back((*p)[i].is_string() ? (*p)[i].get<std::string>() : m.tokenizer->decode(r.prompts[i]));
  }
  check_context(r, m, "prompt", "max_tokens");
  return r;
}

}  // namespace strata::server
