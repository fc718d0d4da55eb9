// OpenAI response bodies and server-sent-event chunks built from engine events.
//
// ChoiceBuilder follows one choice (one engine request): it runs chat output through the
// model's output parser (ChatFormat::parser: reasoning_content, content and tool calls →
// OpenAI tool_calls), keeps logprobs in OpenAI's chat or legacy-completions shape, and yields a
// delta per event for streaming and the whole message for non-streaming answers.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "server/openai_request.h"
#include "text/chat_format.h"

namespace strata {
class Tokenizer;
}

namespace strata::server {

using ojson = nlohmann::ordered_json;

struct ResponseMeta {
  std::string id;     // "chatcmpl-..." / "cmpl-..."
  std::string model;
  int64_t created = 0;  // unix seconds
  Endpoint endpoint = Endpoint::chat;
  const ChatFormat* chat_format = nullptr;  // chat: parses the output
  bool thinking = false;                    // chat: the output starts inside the reasoning
  int top_logprobs = -1;  // -1: no logprobs
};

// What one event added to a choice.
struct ChoiceDelta {
  std::string reasoning, content;  // completions: content is the text
  std::vector<ToolCall> tool_calls;
  std::vector<std::string> tool_call_ids;
  size_t first_tool_index = 0;  // index of tool_calls[0] among the choice's calls
  ojson logprobs = nullptr;     // entries for this event's tokens (shape per endpoint)
  const char* finish_reason = nullptr;  // set on the last delta
  bool empty() const {
    return reasoning.empty() && content.empty() && tool_calls.empty() && logprobs.is_null() && !finish_reason;
  }
};

class ChoiceBuilder {
 public:
  // `echo` (completions with "echo": true): text the choice starts with, sent with its first delta.
  ChoiceBuilder(const Tokenizer& tok, const ResponseMeta& meta, size_t index, std::string echo = {});
  ChoiceBuilder(ChoiceBuilder&&) noexcept;
  ~ChoiceBuilder();

  // One engine event (a token and/or the final event). Cancelled and errored finishes leave
  // finish_reason unset; the caller answers those itself.
  ChoiceDelta add(const engine::Event& ev);

  // A cancelled choice whose client asked for the cancellation: what it had is its answer,
  // with finish_reason "cancelled" and no error. Returns the text the output parser still held
  // (a partial marker), released as a length finish releases it, with the finish reason.
  ChoiceDelta end_cancelled();

  size_t index() const { return index_; }
  bool finished() const { return finished_; }
  bool cancelled() const { return cancelled_; }
  const std::string& error() const { return error_; }
  int64_t prompt_tokens() const { return prompt_tokens_; }
  int64_t completion_tokens() const { return completion_tokens_; }
  int64_t cached_tokens() const { return cached_tokens_; }
  const char* finish_reason() const { return finish_reason_; }  // null until a clean finish

  // Non-streaming choice: chat {"index","message","logprobs","finish_reason"} or completion
  // {"index","text","logprobs","finish_reason"}.
  ojson choice_json() const;

 private:
  void parse(std::string_view text, ChoiceDelta& d, bool at_end);
  void take(std::vector<StreamEvent>&& evs, ChoiceDelta& d);
  ojson logprob_entries(const engine::Event& ev, size_t text_offset);
  std::string tool_call_id(size_t call) const;

  const Tokenizer& tok_;
  ResponseMeta meta_;
  size_t index_;
  std::unique_ptr<ChatOutputParser> parser_;  // chat only
  bool raw_ = false;                           // the parser rejected the output: pass text through
  std::string reasoning_, content_;
  std::string echo_;  // not yet sent
  std::vector<ToolCall> tool_calls_;
  std::vector<std::string> tool_call_ids_;
  ojson logprobs_;  // accumulated (chat: content array; completion: four parallel arrays)
  bool finished_ = false, cancelled_ = false;
  std::string error_;
  const char* finish_reason_ = nullptr;
  int32_t last_token_ = -1;
  int64_t prompt_tokens_ = 0, completion_tokens_ = 0, cached_tokens_ = 0;
};

// {"prompt_tokens","completion_tokens","total_tokens","prompt_tokens_details":{"cached_tokens"}}
ojson usage_json(int64_t prompt_tokens, int64_t completion_tokens, int64_t cached_tokens);

// One streamed chunk for choice `index` carrying `d` (chat.completion.chunk or text_completion).
// `first` adds the assistant role to a chat delta. `include_usage` adds "usage": null.
ojson chunk_json(const ResponseMeta& meta, size_t index, const ChoiceDelta& d, bool first, bool include_usage);
// The final usage chunk of a stream with stream_options.include_usage: "choices": [].
ojson usage_chunk_json(const ResponseMeta& meta, const ojson& usage);
// The whole non-streaming response.
ojson response_json(const ResponseMeta& meta, const std::vector<ojson>& choices, const ojson& usage);

// "data: <json>\n\n" (invalid UTF-8 replaced, never throws) and "data: [DONE]\n\n".
std::string sse_event(const ojson& j);
std::string sse_done();
// JSON text of j with invalid UTF-8 replaced by U+FFFD (model output may split characters).
std::string dump_json(const ojson& j);

std::string new_id(const char* prefix);  // prefix + 24 random alphanumerics

}  // namespace strata::server
