// Parsing DeepSeek-V4 completions back into an assistant message: reasoning_content, content
// and DSML tool calls, by the rules of DeepSeek's parse_message_from_completion_text. The text
// parsed is what the model wrote after the prompt, ending with <｜end▁of▁sentence｜> (a completion
// that stops inside a tool-call block may lack it). In thinking mode the prompt ended with
// <think>, so the completion starts with the reasoning and must contain </think>.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "text/dsml.h"

namespace strata {

struct ParsedCompletion {
  std::string reasoning_content;
  std::string content;
  std::vector<ToolCall> tool_calls;

  // {"role":"assistant","content":...,"reasoning_content":...,"tool_calls":[{"type":"function",
  // "function":{"name":...,"arguments":...}}]}, the official parser's return value.
  nlohmann::ordered_json to_json() const;
};

// Throws strata::Error for output the official parser rejects (missing </think> or EOS, text
// after the end, special tokens inside content or reasoning, malformed DSML).
// `block`: the tool-call block's markers (DeepSeek-V3.2's are "function_calls").
ParsedCompletion parse_completion(std::string_view text, bool thinking,
                                  const dsv4::DsmlBlock& block = dsv4::kToolCallsBlock);

struct StreamEvent {
  enum class Kind { kReasoning, kContent, kToolCall };
  Kind kind;
  std::string text;   // reasoning or content delta
  ToolCall tool_call; // a completed call (kToolCall)
};

// The same parser fed text deltas as they are generated. Text is released as soon as it cannot
// be part of a special marker, so a marker split across deltas never leaks out as content; a
// tool call is released when its </｜DSML｜invoke> arrives. The events of all feed() calls plus
// finish() add up to exactly what parse_completion() returns for the concatenated text, and it
// throws where parse_completion() would (errors may come only at finish(), after some events).
class StreamingParser {
 public:
  explicit StreamingParser(bool thinking, const dsv4::DsmlBlock& block = dsv4::kToolCallsBlock);
  std::vector<StreamEvent> feed(std::string_view delta);
  std::vector<StreamEvent> finish();
  // Everything parsed so far.
  const ParsedCompletion& result() const { return result_; }
  // The end-of-sentence marker has been read.
  bool ended() const { return state_ == State::kEnded; }

 private:
  enum class State { kReasoning, kContent, kToolCalls, kAfterToolCalls, kEnded };
  void run(bool at_end, std::vector<StreamEvent>& events);
  void emit_text(std::string_view text, std::vector<StreamEvent>& events);
  void take_tool_calls(std::vector<StreamEvent>& events);

  State state_;
  std::string buf_;  // unread text of the reasoning, content or post-block states (held back)
  std::string_view block_start_;
  DsmlReader dsml_;
  std::vector<ToolCall> new_calls_;
  ParsedCompletion result_;
  bool finished_ = false;
};

}  // namespace strata
