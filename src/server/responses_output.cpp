#include "server/responses_output.h"

#include <utility>

namespace strata::server {

std::string sse_named_event(const std::string& type, const ojson& data) {
  return "event: " + type + "\ndata: " + dump_json(data) + "\n\n";
}

ResponseBuilder::ResponseBuilder(std::string id, std::string model, int64_t created_at, ojson settings, bool thinking,
                                 std::optional<int32_t> think_start, std::optional<int32_t> think_end)
    : id_(std::move(id)), model_(std::move(model)), created_at_(created_at), settings_(std::move(settings)),
      think_start_(think_start), think_end_(think_end), in_reasoning_(thinking) {}

std::string ResponseBuilder::event(const char* type, ojson body) {
  const int64_t seq = seq_++;
  if (seq < skip_) return {};  // the client has it
  ojson e = {{"type", type}};
  for (auto& [k, v] : body.items()) e[k] = std::move(v);
  e["sequence_number"] = seq;
  return "id: " + std::to_string(seq) + "\n" + sse_named_event(type, e);
}

// The response id's own part, the item's kind and its place in the output: unique as the
// response id is, and the same whenever the response is rendered again from its events.
std::string ResponseBuilder::item_id(const char* prefix) const {
  const size_t us = id_.find('_');
  return prefix + (us == std::string::npos ? id_ : id_.substr(us + 1)) + "_" + std::to_string(output_.size());
}

ojson ResponseBuilder::message_item(const char* status) const {
  ojson content = ojson::array();
  if (std::string(status) != "in_progress")
    content.push_back({{"type", "output_text"}, {"text", text_}, {"annotations", ojson::array()}});
  return {{"id", item_id_}, {"type", "message"}, {"status", status}, {"role", "assistant"}, {"content", content}};
}

ojson ResponseBuilder::reasoning_item(const char* status) const {
  return {{"id", item_id_},
          {"type", "reasoning"},
          {"summary", ojson::array()},
          {"content", ojson::array({{{"type", "reasoning_text"}, {"text", text_}}})},
          {"status", status}};
}

std::string ResponseBuilder::open(Open kind) {
  std::string out = close();
  open_ = kind;
  text_.clear();
  const bool msg = kind == Open::message;
  item_id_ = item_id(msg ? "msg_" : "rs_");
  ojson item = msg ? message_item("in_progress")
                   : ojson{{"id", item_id_}, {"type", "reasoning"}, {"summary", ojson::array()},
                           {"content", ojson::array()}, {"status", "in_progress"}};
  const size_t index = output_.size();
  out += event("response.output_item.added", {{"output_index", index}, {"item", item}});
  ojson part = msg ? ojson{{"type", "output_text"}, {"text", ""}, {"annotations", ojson::array()}}
                   : ojson{{"type", "reasoning_text"}, {"text", ""}};
  out += event("response.content_part.added",
               {{"item_id", item_id_}, {"output_index", index}, {"content_index", 0}, {"part", part}});
  return out;
}

std::string ResponseBuilder::close() {
  if (open_ == Open::none) return {};
  const bool msg = open_ == Open::message;
  const size_t index = output_.size();
  // An item still open when the length limit or a cancellation ends the response is cut too.
  const char* status = status_ == "incomplete" || status_ == "cancelled" ? "incomplete" : "completed";
  ojson item = msg ? message_item(status) : reasoning_item(status);
  std::string out;
  if (msg)
    out += event("response.output_text.done", {{"item_id", item_id_}, {"output_index", index}, {"content_index", 0},
                                               {"text", text_}, {"logprobs", ojson::array()}});
  else
    out += event("response.reasoning_text.done",
                 {{"item_id", item_id_}, {"output_index", index}, {"content_index", 0}, {"text", text_}});
  out += event("response.content_part.done",
               {{"item_id", item_id_}, {"output_index", index}, {"content_index", 0}, {"part", item["content"][0]}});
  out += event("response.output_item.done", {{"output_index", index}, {"item", item}});
  output_.push_back(std::move(item));
  has_message_ = has_message_ || msg;
  open_ = Open::none;
  return out;
}

std::string ResponseBuilder::start() {
  std::string out = event("response.created", {{"response", response()}});
  out += event("response.in_progress", {{"response", response()}});
  return out;
}

std::string ResponseBuilder::add(int32_t token, const ChoiceDelta& d) {
  // vLLM's count: the tokens inside the think block, its markers excluded.
  if (token >= 0) {
    if (in_reasoning_) {
      if (token == think_end_) in_reasoning_ = false;
      else ++reasoning_tokens_;
    } else if (token == think_start_) {
      in_reasoning_ = true;
    }
  }
  std::string out;
  if (!d.reasoning.empty()) {
    if (open_ != Open::reasoning) out += open(Open::reasoning);
    text_ += d.reasoning;
    out += event("response.reasoning_text.delta", {{"item_id", item_id_},
                                                   {"output_index", output_.size()},
                                                   {"content_index", 0},
                                                   {"delta", d.reasoning}});
  }
  if (!d.content.empty()) {
    if (open_ != Open::message) out += open(Open::message);
    text_ += d.content;
    out += event("response.output_text.delta", {{"item_id", item_id_},
                                                {"output_index", output_.size()},
                                                {"content_index", 0},
                                                {"delta", d.content},
                                                {"logprobs", ojson::array()}});
  }
  for (size_t i = 0; i < d.tool_calls.size(); ++i) {
    out += close();
    const size_t index = output_.size();
    const std::string fc_id = item_id("fc_");
    ojson item = {{"id", fc_id},
                  {"type", "function_call"},
                  {"status", "in_progress"},
                  {"call_id", d.tool_call_ids[i]},
                  {"name", d.tool_calls[i].name},
                  {"arguments", ""}};
    out += event("response.output_item.added", {{"output_index", index}, {"item", item}});
    // The chat format's parser yields a call once it is complete: its arguments in one delta.
    out += event("response.function_call_arguments.delta",
                 {{"item_id", fc_id}, {"output_index", index}, {"delta", d.tool_calls[i].arguments}});
    out += event("response.function_call_arguments.done",
                 {{"item_id", fc_id}, {"output_index", index}, {"arguments", d.tool_calls[i].arguments}});
    item["status"] = "completed";
    item["arguments"] = d.tool_calls[i].arguments;
    out += event("response.output_item.done", {{"output_index", index}, {"item", item}});
    output_.push_back(std::move(item));
    has_call_ = true;
  }
  return out;
}

std::string ResponseBuilder::finish(const char* finish_reason, int64_t prompt_tokens, int64_t completion_tokens,
                                    int64_t cached_tokens) {
  const bool cut = finish_reason && std::string(finish_reason) == "length";
  if (cut) incomplete_ = {{"reason", "max_output_tokens"}};
  return end(cut ? "incomplete" : "completed", prompt_tokens, completion_tokens, cached_tokens);
}

std::string ResponseBuilder::cancel(int64_t prompt_tokens, int64_t completion_tokens, int64_t cached_tokens) {
  return end("cancelled", prompt_tokens, completion_tokens, cached_tokens);
}

std::string ResponseBuilder::end(const char* status, int64_t prompt_tokens, int64_t completion_tokens,
                                 int64_t cached_tokens) {
  status_ = status;
  std::string out;
  // A reply without text or calls still has its message, so output_text is "" rather than absent.
  if (open_ != Open::message && !has_message_ && !has_call_) out += open(Open::message);
  out += close();
  usage_ = {{"input_tokens", prompt_tokens},
            {"input_tokens_details", {{"cached_tokens", cached_tokens}}},
            {"output_tokens", completion_tokens},
            {"output_tokens_details", {{"reasoning_tokens", reasoning_tokens_}}},
            {"total_tokens", prompt_tokens + completion_tokens}};
  out += event(("response." + status_).c_str(), {{"response", response()}});
  return out;
}

std::string ResponseBuilder::fail(const std::string& message) {
  status_ = "failed";
  error_ = {{"code", "server_error"}, {"message", message}};
  std::string out = event("error", {{"code", "server_error"}, {"message", message}, {"param", nullptr}});
  out += event("response.failed", {{"response", response()}});
  return out;
}

ojson ResponseBuilder::response() const {
  ojson r = {{"id", id_},
             {"object", "response"},
             {"created_at", created_at_},
             {"status", status_},
             {"background", false},
             {"error", error_},
             {"incomplete_details", incomplete_},
             {"model", model_},
             {"output", output_},
             {"previous_response_id", nullptr},
             {"truncation", "disabled"},
             {"usage", usage_}};
  for (const auto& [k, v] : settings_.items()) r[k] = v;
  return r;
}

}  // namespace strata::server
