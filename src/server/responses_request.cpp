#include "server/responses_request.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "server/api_error.h"
#include "server/forced_tool_call.h"
#include "server/json_field.h"
#include "server/random_seed.h"
#include "server/response_format.h"
#include "text/chat_format.h"
#include "text/tokenizer.h"

namespace strata::server {
namespace {

using ojson = nlohmann::ordered_json;

bool one_of(const std::string& s, std::initializer_list<const char*> names) {
  return std::any_of(names.begin(), names.end(), [&](const char* n) { return s == n; });
}

// The keys of an object part of the request that strata reads; any other (not null) is a 400,
// so that nothing a client asks for is dropped unseen. `where` names the object in messages.
void only_keys(const ojson& obj, std::initializer_list<const char*> known, const std::string& where, const char* param) {
  for (const auto& [k, v] : obj.items())
    if (!v.is_null() && !one_of(k, known))
      throw unsupported_parameter(param, "'" + where + "." + k + "' is not supported.");
}

const std::string& string_of(const ojson& j, const char* key, const std::string& where, const char* param) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) throw bad_request("'" + where + "." + key + "' must be a string.", param);
  return it->get_ref<const std::string&>();
}

// The top-level fields: accepted ones are checked where they are read; the rest are 400s,
// with a reason where strata has one.
void check_fields(const ojson& j) {
  static const char* kRead[] = {"model", "input", "instructions", "tools", "tool_choice", "max_output_tokens",
                                "temperature", "top_p", "seed", "stream", "reasoning", "text", "metadata", "user",
                                "store", "parallel_tool_calls", "service_tier", "prompt_cache_key",
                                "safety_identifier", "truncation", "background", "include"};
  for (const auto& [k, v] : j.items()) {
    if (v.is_null() || std::find(std::begin(kRead), std::end(kRead), k) != std::end(kRead)) continue;
    if (k == "previous_response_id" || k == "conversation")
      throw unsupported_parameter(k, "'" + k + "' is not supported: strata keeps no responses or conversations. "
                                          "Send the whole conversation in 'input' (earlier output items may be "
                                          "passed back as they are).");
    if (k == "prompt")
      throw unsupported_parameter(k, "'prompt' (a stored prompt template) is not supported: send 'instructions' "
                                     "and 'input'.");
    throw unsupported_parameter(k, "'" + k + "' is not supported by strata's Responses API.");
  }
  if (const ojson* v = field(j, "background")) {
    if (!v->is_boolean()) throw bad_request("'background' must be a boolean.", "background");
    if (v->get<bool>())
      throw unsupported_value("background", "'background': true is not supported: strata keeps no responses to "
                                            "poll. Stream the response instead.");
  }
  if (const ojson* v = field(j, "include")) {
    if (!v->is_array()) throw bad_request("'include' must be an array.", "include");
    if (!v->empty())
      throw unsupported_value("include", "'include' " + (*v)[0].dump() +
                                             " is not supported: strata adds no extra output data.");
  }
  if (const ojson* v = field(j, "truncation")) {
    if (!v->is_string()) throw bad_request("'truncation' must be a string.", "truncation");
    if (*v != "disabled")
      throw unsupported_value("truncation", "Only 'truncation': \"disabled\" is supported: strata does not drop "
                                            "input items; an input over the context is a 400.");
  }
  if (const ojson* v = field(j, "metadata")) {
    if (!v->is_object()) throw bad_request("'metadata' must be an object.", "metadata");
    for (const auto& [k, s] : v->items())
      if (!s.is_string()) throw bad_request("'metadata." + k + "' must be a string.", "metadata");
  }
  for (const char* k : {"user", "service_tier", "prompt_cache_key", "safety_identifier"})
    if (const ojson* v = field(j, k); v && !v->is_string())
      throw bad_request(std::string("'") + k + "' must be a string.", k);
  if (const ojson* v = field(j, "store"); v && !v->is_boolean()) throw bad_request("'store' must be a boolean.", "store");
  if (const ojson* v = field(j, "parallel_tool_calls")) {
    if (!v->is_boolean()) throw bad_request("'parallel_tool_calls' must be a boolean.", "parallel_tool_calls");
    if (!v->get<bool>())
      throw unsupported_value("parallel_tool_calls",
                              "'parallel_tool_calls': false cannot be enforced: strata does not constrain "
                              "decoding, so the model may call several tools at once.");
  }
}

std::string check_model(const ojson& j, const ModelInfo& m) {
  const ojson* v = field(j, "model");
  if (!v) return m.id;
  if (!v->is_string()) throw bad_request("'model' must be a string.", "model");
  if (*v != m.id) throw model_not_found(v->get<std::string>());
  return m.id;
}

// Content: a string, or text parts (input_text / output_text), as one string.
std::string content_text(const ojson& c, const std::string& where) {
  if (c.is_string()) return c.get<std::string>();
  if (!c.is_array()) throw bad_request("'" + where + "' must be a string or an array of parts.", "input");
  std::string text;
  for (size_t k = 0; k < c.size(); ++k) {
    const std::string at = where + "[" + std::to_string(k) + "]";
    const ojson& part = c[k];
    const std::string type = part.is_object() && part.contains("type") && part["type"].is_string() ? part["type"].get<std::string>() : "";
    if (one_of(type, {"input_image", "input_file", "input_audio"}))
      throw bad_request("'" + at + "': '" + type + "' content is not supported: strata serves the text model " +
                            "only. Send input_text parts.",
                        "input");
    if (type != "input_text" && type != "output_text")
      throw bad_request("'" + at + "': only input_text and output_text parts ({\"type\": \"input_text\", " +
                            "\"text\": ...}) are supported.",
                        "input");
    only_keys(part, {"type", "text", "annotations", "logprobs"}, at, "input");
    text += string_of(part, "text", at, "input");
  }
  return text;
}

// `input` (and `instructions`) as chat messages.
ojson chat_messages(const ojson& j) {
  ojson messages = ojson::array();
  if (const ojson* ins = field(j, "instructions")) {
    if (!ins->is_string()) throw bad_request("'instructions' must be a string.", "instructions");
    messages.push_back({{"role", "system"}, {"content", *ins}});
  }
  const ojson* input = field(j, "input");
  if (!input) throw bad_request("'input' is a required property.", "input");
  if (input->is_string()) {
    messages.push_back({{"role", "user"}, {"content", *input}});
    return messages;
  }
  if (!input->is_array()) throw bad_request("'input' must be a string or an array of items.", "input");
  if (input->empty()) throw bad_request("'input' must contain at least one item.", "input", "empty_array");
  std::string reasoning;  // from a reasoning item, for the assistant turn that follows it
  // The assistant turn a function_call joins: the last message, when it is one.
  auto assistant_turn = [&]() -> ojson& {
    if (messages.empty() || messages.back()["role"] != "assistant")
      messages.push_back({{"role", "assistant"}, {"content", nullptr}});
    ojson& m = messages.back();
    if (!reasoning.empty()) m["reasoning_content"] = std::exchange(reasoning, {});
    return m;
  };
  for (size_t i = 0; i < input->size(); ++i) {
    const std::string at = "input[" + std::to_string(i) + "]";
    const ojson& item = (*input)[i];
    if (!item.is_object()) throw bad_request("'" + at + "' must be an object.", "input");
    std::string type = "message";  // an "easy" input message has no type
    if (const ojson* t = field(item, "type")) {
      if (!t->is_string()) throw bad_request("'" + at + ".type' must be a string.", "input");
      type = t->get<std::string>();
    }
    if (type == "message") {
      only_keys(item, {"type", "role", "content", "id", "status"}, at, "input");
      const std::string& role = string_of(item, "role", at, "input");
      if (!one_of(role, {"user", "system", "developer", "assistant"}))
        throw bad_request("'" + at + ".role' must be one of user, system, developer, assistant.", "input");
      if (!item.contains("content")) throw bad_request("'" + at + ".content' is a required property.", "input");
      std::string text = content_text(item["content"], at + ".content");
      if (role == "assistant") {
        messages.push_back({{"role", "assistant"}, {"content", std::move(text)}});
        if (!reasoning.empty()) messages.back()["reasoning_content"] = std::exchange(reasoning, {});
      } else {
        messages.push_back({{"role", role}, {"content", std::move(text)}});
      }
    } else if (type == "function_call") {
      only_keys(item, {"type", "call_id", "name", "arguments", "id", "status"}, at, "input");
      ojson call = {{"id", string_of(item, "call_id", at, "input")},
                    {"type", "function"},
                    {"function", {{"name", string_of(item, "name", at, "input")},
                                  {"arguments", string_of(item, "arguments", at, "input")}}}};
      ojson& turn = assistant_turn();
      if (!turn.contains("tool_calls")) turn["tool_calls"] = ojson::array();
      turn["tool_calls"].push_back(std::move(call));
    } else if (type == "function_call_output") {
      only_keys(item, {"type", "call_id", "output", "id", "status"}, at, "input");
      const std::string& id = string_of(item, "call_id", at, "input");
      if (!item.contains("output")) throw bad_request("'" + at + ".output' is a required property.", "input");
      messages.push_back({{"role", "tool"}, {"tool_call_id", id}, {"content", content_text(item["output"], at + ".output")}});
    } else if (type == "reasoning") {
      only_keys(item, {"type", "id", "summary", "content", "status", "encrypted_content"}, at, "input");
      if (field(item, "encrypted_content"))
        throw unsupported_parameter("input", "'" + at + ".encrypted_content' is not supported: strata writes no "
                                             "encrypted reasoning; pass back its reasoning_text content.");
      if (const ojson* c = field(item, "content")) {
        if (!c->is_array()) throw bad_request("'" + at + ".content' must be an array.", "input");
        for (size_t k = 0; k < c->size(); ++k) {
          const std::string pat = at + ".content[" + std::to_string(k) + "]";
          if (!(*c)[k].is_object() || (*c)[k].value("type", "") != "reasoning_text")
            throw bad_request("'" + pat + "' must be a reasoning_text part.", "input");
          reasoning += string_of((*c)[k], "text", pat, "input");
        }
      }
      // The summary is derived from the reasoning, which the content already holds.
    } else if (type == "item_reference") {
      throw unsupported_value("input", "'" + at + "': item_reference is not supported: strata keeps no items. "
                                       "Pass the item itself.");
    } else {
      throw bad_request("'" + at + ".type' \"" + type + "\" is not supported: input items are message, " +
                            "function_call, function_call_output and reasoning.",
                        "input");
    }
  }
  return messages;
}

// Responses' flat function tools as chat tools; the same fields, so the prompt is chat's.
ojson chat_tools(const ojson& tools) {
  if (!tools.is_array()) throw bad_request("'tools' must be an array.", "tools");
  ojson out = ojson::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string at = "tools[" + std::to_string(i) + "]";
    const ojson& t = tools[i];
    if (!t.is_object() || !t.contains("type") || !t["type"].is_string())
      throw bad_request("'" + at + "' must be an object with a string 'type'.", "tools");
    if (t["type"] != "function")
      throw unsupported_value("tools", "'" + at + "': built-in tool '" + t["type"].get<std::string>() +
                                           "' is not supported: strata runs no tools. Declare function tools "
                                           "and run them yourself.");
    only_keys(t, {"type", "name", "description", "parameters", "strict"}, at, "tools");
    string_of(t, "name", at, "tools");
    if (const ojson* d = field(t, "description"); d && !d->is_string())
      throw bad_request("'" + at + ".description' must be a string.", "tools");
    if (const ojson* p = field(t, "parameters"); p && !p->is_object())
      throw bad_request("'" + at + ".parameters' must be a JSON Schema object.", "tools");
    if (const ojson* s = field(t, "strict"); s && !s->is_boolean())
      throw bad_request("'" + at + ".strict' must be a boolean.", "tools");
    // In the client's order: the chat format writes the function object into the prompt as is.
    ojson fn = ojson::object();
    for (const auto& [k, v] : t.items())
      if (k != "type" && !v.is_null()) fn[k] = v;
    out.push_back({{"type", "function"}, {"function", std::move(fn)}});
  }
  return out;
}

// Applies tool_choice to the chat tools, as chat does: "none" leaves them out, "required" or a
// named function sets `forced` to the tools the output must call. Returns the value to echo.
ojson apply_tool_choice(const ojson& j, ojson& tools, ojson& forced) {
  const ojson* tc = field(j, "tool_choice");
  if (!tc) return "auto";
  if (tc->is_string()) {
    const std::string c = tc->get<std::string>();
    if (c == "none") tools = nullptr;
    else if (c == "required" && tools.is_null())
      throw bad_request("'tool_choice' is required but no tools were given.", "tool_choice");
    else if (c == "required") forced = tools;
    else if (c != "auto") throw bad_request("'tool_choice' must be none, auto, required or a function.", "tool_choice");
    return *tc;
  }
  if (!tc->is_object() || !tc->contains("type") || !(*tc)["type"].is_string())
    throw bad_request("'tool_choice' must be a string or an object with a string 'type'.", "tool_choice");
  const std::string type = (*tc)["type"].get<std::string>();
  if (type != "function")
    throw unsupported_value("tool_choice", "'tool_choice' of type '" + type + "' is not supported: only function "
                                           "tools are.");
  only_keys(*tc, {"type", "name"}, "tool_choice", "tool_choice");
  const std::string& name = string_of(*tc, "name", "tool_choice", "tool_choice");
  if (!tools.is_null())
    for (const auto& t : tools)
      if (t["function"]["name"] == name) forced = ojson::array({t});
  if (forced.is_null()) throw bad_request("'tool_choice' names a function that is not in 'tools'.", "tool_choice");
  return *tc;
}

// reasoning.effort: thinking on, with chat's reasoning_effort; "none" (or no effort) leaves it
// off. Returns the value to echo.
ojson apply_reasoning(const ojson& j, ChatRenderOptions& ro) {
  ojson echo = {{"effort", nullptr}, {"summary", nullptr}};
  const ojson* r = field(j, "reasoning");
  if (!r) return echo;
  if (!r->is_object()) throw bad_request("'reasoning' must be an object.", "reasoning");
  only_keys(*r, {"effort", "summary", "generate_summary"}, "reasoning", "reasoning");
  for (const char* k : {"summary", "generate_summary"})
    if (field(*r, k))
      throw unsupported_value("reasoning", std::string("'reasoning.") + k +
                                               "' is not supported: strata writes no summaries; the reasoning "
                                               "item carries the whole reasoning_text.");
  if (const ojson* e = field(*r, "effort")) {
    if (!e->is_string() || !one_of(e->get<std::string>(), {"none", "minimal", "low", "medium", "high", "max"}))
      throw bad_request("'reasoning.effort' must be one of none, minimal, low, medium, high, max.", "reasoning");
    echo["effort"] = *e;
    if (*e != "none") {
      ro.thinking = true;
      ro.reasoning_effort = e->get<std::string>();
    }
  }
  return echo;
}

// text.format → the structured output; returns the value to echo.
ojson apply_text(const ojson& j, ApiRequest& r) {
  ojson echo = {{"format", {{"type", "text"}}}};
  const ojson* t = field(j, "text");
  if (!t) return echo;
  if (!t->is_object()) throw bad_request("'text' must be an object.", "text");
  only_keys(*t, {"format"}, "text", "text");
  if (const ojson* f = field(*t, "format")) {
    r.sampling.structured = parse_text_format(*f);
    echo["format"] = *f;
  }
  return echo;
}

// temperature, top_p, seed and max_output_tokens through SamplingParams' own checks.
SamplingParams sampling(const ojson& j) {
  nlohmann::json s = nlohmann::json::object();
  for (const char* k : {"temperature", "top_p", "seed"})
    if (const ojson* v = field(j, k)) s[k] = nlohmann::json::parse(v->dump());
  if (const ojson* v = field(j, "max_output_tokens")) {
    if (!v->is_number_integer() || v->get<int64_t>() < 1)
      throw bad_request("'max_output_tokens' must be an integer of at least 1.", "max_output_tokens");
    s["max_tokens"] = v->get<int64_t>();
  }
  SamplingParams p;
  try {
    from_json(s, p);
    p.validate();
  } catch (const Error& e) {
    const std::string msg = e.what();
    const std::string first = msg.substr(0, msg.find_first_of(" '\""));
    throw bad_request(msg, first == "max_tokens" ? "max_output_tokens" : s.contains(first) ? first : "");
  }
  if (!p.seed) p.seed = random_seed();
  return p;
}

void check_context(ApiRequest& r, const ModelInfo& m) {
  const int64_t plen = int64_t(r.prompts[0].size());
  if (plen >= m.max_context)
    throw bad_request("This model's maximum context length is " + std::to_string(m.max_context) +
                          " tokens. However, your input has " + std::to_string(plen) +
                          " tokens. Please reduce the length of the input.",
                      "input", "context_length_exceeded");
  auto& mt = r.sampling.max_tokens;
  if (mt && plen + *mt > m.max_context)
    throw bad_request("This model's maximum context length is " + std::to_string(m.max_context) +
                          " tokens. However, you requested " + std::to_string(plen + *mt) + " tokens (" +
                          std::to_string(plen) + " in the input, " + std::to_string(*mt) +
                          " in the output). Please reduce the length of the input or max_output_tokens.",
                      "max_output_tokens", "context_length_exceeded");
  if (!mt) mt = m.max_context - plen;
}

}  // namespace

ResponsesRequest parse_responses_request(std::string_view body, const ModelInfo& m) {
  const ojson j = parse_json_body(body);
  ResponsesRequest out;
  ApiRequest& r = out.api;
  r.endpoint = Endpoint::chat;
  r.model = check_model(j, m);
  check_fields(j);
  if (const ojson* v = field(j, "stream")) {
    if (!v->is_boolean()) throw bad_request("'stream' must be a boolean.", "stream");
    r.stream = v->get<bool>();
  }
  r.sampling = sampling(j);

  const ojson messages = chat_messages(j);
  ojson tools = nullptr;
  if (const ojson* t = field(j, "tools")) {
    tools = chat_tools(*t);
    if (tools.empty()) tools = nullptr;
  }
  ojson forced = nullptr;
  const ojson tool_choice = apply_tool_choice(j, tools, forced);
  ChatRenderOptions ro;
  const ojson reasoning = apply_reasoning(j, ro);
  const ojson text = apply_text(j, r);

  if (!m.chat_format)
    throw bad_request("This model has no chat template, so it serves no responses; use /v1/completions.", "input");
  std::string prompt;
  try {
    prompt = m.chat_format->render(messages, tools, ro);
  } catch (const Error& e) {
    throw bad_request(e.what(), "input");
  }
  r.thinking = m.chat_format->output_starts_in_reasoning(prompt, ro);
  if (!forced.is_null()) {
    if (r.sampling.structured)
      throw unsupported_value("tool_choice", "'tool_choice' that forces a call cannot be combined with a JSON "
                                             "'text.format': the output is either the calls or the JSON.");
    r.sampling.structured = forced_tool_calls(forced, m.chat_format->tool_call_syntax());
  }
  if (r.sampling.structured && r.thinking)
    start_after_reasoning(*r.sampling.structured, *m.tokenizer, forced.is_null() ? "text" : "tool_choice");
  r.prompts.push_back(m.tokenizer->encode(prompt));
  check_context(r, m);

  const ojson* instructions = field(j, "instructions");
  const ojson* max_out = field(j, "max_output_tokens");
  const ojson* metadata = field(j, "metadata");
  const ojson* user = field(j, "user");
  out.settings = {{"instructions", instructions ? *instructions : ojson(nullptr)},
                  {"max_output_tokens", max_out ? *max_out : ojson(nullptr)},
                  {"metadata", metadata ? *metadata : ojson::object()},
                  {"parallel_tool_calls", true},
                  {"reasoning", reasoning},
                  {"store", false},  // strata keeps nothing, whatever was asked
                  {"temperature", r.sampling.temperature},
                  {"text", text},
                  {"tool_choice", tool_choice},
                  {"tools", field(j, "tools") ? j["tools"] : ojson::array()},
                  {"top_p", r.sampling.top_p},
                  {"user", user ? *user : ojson(nullptr)}};
  return out;
}

}  // namespace strata::server
