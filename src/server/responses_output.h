// The Responses API's output: the response object and its streamed events, built from the
// same ChoiceDeltas as chat (ChoiceBuilder runs the chat format's output parser).
//
// Output items, in the order the model wrote them: reasoning {"type": "reasoning", "id":
// "rs_…", "summary": [], "content": [{"type": "reasoning_text", "text"}]} (vLLM's shape for
// open models), message {"type": "message", "id": "msg_…", "role": "assistant", "content":
// [{"type": "output_text", "text", "annotations": []}]}, and one function_call {"id": "fc_…",
// "call_id": "call_…", "name", "arguments"} per tool call. A reply with neither text nor calls
// still has its (empty) message, so output_text is always there.
//
// Streamed as SSE "event: <type>" + "data: <json>" with a sequence_number each:
// response.created, response.in_progress; per item response.output_item.added, then for text
// response.content_part.added, response.output_text.delta..., response.output_text.done,
// response.content_part.done (reasoning the same with response.reasoning_text.delta / .done
// and a reasoning_text part), for a call response.function_call_arguments.delta / .done;
// response.output_item.done; last response.completed, or response.incomplete when the length
// limit cut it, or response.cancelled (status "cancelled") when its client cancelled it: OpenAI
// lists no stream event for a cancellation, and that is the name its webhooks give one. Every
// event has an SSE id, its sequence_number, so that a client can resume after the last it had.
//
// Item ids are the response id's own part with the item's index ("msg_<id>_0"), and call ids
// derive from the response id (ChoiceBuilder): rendering the same events again gives the same
// bytes.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/openai_response.h"

namespace strata::server {

class ResponseBuilder {
 public:
  // `settings`: ResponsesRequest::settings. Reasoning tokens are those between `think_start`
  // and `think_end` (the output starts between them when `thinking`), markers excluded.
  ResponseBuilder(std::string id, std::string model, int64_t created_at, ojson settings, bool thinking,
                  std::optional<int32_t> think_start, std::optional<int32_t> think_end);

  // response.created and response.in_progress.
  std::string start();
  // One engine event's token (-1 for none) and what it added to the choice: the events for it.
  std::string add(int32_t token, const ChoiceDelta& d);
  // Closes the open item and the response: status completed, or incomplete for "length".
  // Returns the remaining events and response.completed / response.incomplete.
  std::string finish(const char* finish_reason, int64_t prompt_tokens, int64_t completion_tokens,
                     int64_t cached_tokens);
  // Its client cancelled it: closes the open item (status incomplete); status cancelled and
  // the response.cancelled event.
  std::string cancel(int64_t prompt_tokens, int64_t completion_tokens, int64_t cached_tokens);
  // An error inside the stream: the "error" event, then response.failed.
  std::string fail(const std::string& message);

  // The response object as it stands (status in_progress until finish()).
  ojson response() const;
  // Events numbered below `n` are left out of what the builder returns (a client had them).
  void skip_events(int64_t n) { skip_ = n; }
  int64_t reasoning_tokens() const { return reasoning_tokens_; }

 private:
  enum class Open { none, reasoning, message };
  std::string event(const char* type, ojson body);
  std::string end(const char* status, int64_t prompt_tokens, int64_t completion_tokens, int64_t cached_tokens);
  std::string item_id(const char* prefix) const;
  std::string open(Open kind);  // closes the open item first
  std::string close();
  ojson message_item(const char* status) const;
  ojson reasoning_item(const char* status) const;

  std::string id_, model_;
  int64_t created_at_;
  ojson settings_;
  std::optional<int32_t> think_start_, think_end_;
  bool in_reasoning_;
  int64_t reasoning_tokens_ = 0;
  int64_t seq_ = 0, skip_ = 0;
  ojson output_ = ojson::array();  // finished items
  Open open_ = Open::none;
  std::string item_id_, text_;  // the open item's
  bool has_message_ = false, has_call_ = false;
  std::string status_ = "in_progress";
  ojson incomplete_ = nullptr, usage_ = nullptr, error_ = nullptr;
};

// "event: <type>\ndata: <json>\n\n".
std::string sse_named_event(const std::string& type, const ojson& data);

}  // namespace strata::server
