// Parsing the output of models whose chat templates mark reasoning with <think>...</think> and
// tool calls with Hermes-style <tool_call> blocks (Qwen3, QwQ, Hermes, and most templates that
// follow them):
//
//   <think>
//   reasoning
//   </think>
//
//   content
//   <tool_call>
//   {"name": "get_weather", "arguments": {"city": "Oslo"}}
//   </tool_call>
//
// Reasoning: the output starts inside it when the prompt ended with an open <think>
// (`starts_in_reasoning`), or when the output itself starts with <think>; it ends at </think>.
// Tool calls: each block's JSON becomes a ToolCall whose arguments are the JSON text of the
// "arguments" object as Python's json.dumps writes it (a string "arguments" is taken as it is).
// Newlines next to the tags are separators, not text: they are dropped. A block whose JSON is
// not a {"name": string, "arguments": ...} object is passed through as content, tags included;
// so is an unterminated block at the end unless its JSON is complete. `end_marker` (the
// tokenizer's end-of-turn text, when the output still carries it) ends the output: what follows
// is dropped.
//
// Streaming: text is released as soon as it cannot be part of a tag (a tag split across deltas
// never leaks out), on UTF-8 character boundaries; a tool call is released at its </tool_call>.
// The events of all feed() calls plus finish() add up to result().
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "text/chat_parse.h"

namespace strata {

class TaggedOutputParser {
 public:
  TaggedOutputParser(bool starts_in_reasoning, std::string end_marker = {});
  std::vector<StreamEvent> feed(std::string_view delta);
  std::vector<StreamEvent> finish();
  const ParsedCompletion& result() const { return result_; }

 private:
  enum class State { kStart, kReasoning, kContent, kToolCall, kEnded };
  void run(bool at_end, std::vector<StreamEvent>& events);
  // Releases `text` in the current state, keeping a trailing run of newlines back (they are
  // dropped if a tag follows). `at_end`: nothing more comes in this state.
  void emit(std::string_view text, bool at_end, std::vector<StreamEvent>& events);
  void push_event(StreamEvent::Kind kind, std::string_view text, std::vector<StreamEvent>& events);
  void take_tool_call(std::string_view body, bool closed, std::vector<StreamEvent>& events);

  State state_;
  bool starts_in_reasoning_;
  std::string end_marker_;
  std::string buf_;      // text not yet released
  std::string held_;     // newlines held back at the end of released text
  bool skip_newlines_ = false;  // just after a tag: leading newlines are separators
  ParsedCompletion result_;
  bool finished_ = false;
};

}  // namespace strata
