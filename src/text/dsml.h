// DSML, DeepSeek's XML-like tool-call markup: encoding OpenAI tool calls into a
// <｜DSML｜tool_calls> block (DeepSeek-V4; <｜DSML｜function_calls> for DeepSeek-V3.2), and an
// incremental reader that turns such a block back into calls with JSON-string arguments. Rules
// follow DeepSeek's encoding/encoding_dsv4.py (and encoding_dsv32.py where they differ).
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "text/dsv4_tokens.h"

namespace strata {

struct ToolCall {
  std::string name;
  std::string arguments;  // JSON object text, as OpenAI's function.arguments
};

// One invoke for an assistant turn: each top-level argument becomes a parameter, string values
// as-is with string="true", everything else as Python-style JSON with string="false". Arguments
// that are not JSON at all become one string parameter named "arguments" when text_as_argument
// (V4's encoder), else an error (V3.2's); JSON that is not an object is an error.
std::string dsml_invoke(std::string_view name, std::string_view arguments, bool text_as_argument = true);

// "\n\n" + block.open + "\n" + invokes joined by "\n" + "\n" + block.close.
std::string dsml_tool_calls_block(const std::vector<ToolCall>& calls,
                                  const dsv4::DsmlBlock& block = dsv4::kToolCallsBlock, bool text_as_argument = true);

// Reads a tool-call block from just after "\n\n<｜DSML｜tool_calls" (no '>'), fed in pieces.
// Each completed invoke is appended to `out` as soon as its close tag is seen. Malformed markup
// throws strata::Error. Text after </｜DSML｜tool_calls> is kept for the caller (rest()).
class DsmlReader {
 public:
  explicit DsmlReader(const dsv4::DsmlBlock& block = dsv4::kToolCallsBlock) : block_(block) {}
  void feed(std::string_view text, std::vector<ToolCall>& out);
  // End of input: applies the official reader's rules for a block cut short (a truncated last
  // invoke still counts when its name or last parameter is complete).
  void finish(std::vector<ToolCall>& out);
  bool closed() const { return state_ == State::kClosed; }
  std::string_view rest() const { return closed() ? std::string_view(buf_).substr(start_) : std::string_view(); }

 private:
  enum class State { kOpen, kName, kParamBody, kParamAfter, kClosed };
  struct Param {
    std::string name, value;
    bool is_string;
  };
  void step(std::string_view content, int which, std::vector<ToolCall>& out);
  void end_invoke(std::vector<ToolCall>& out);
  void take_param(std::string_view content);

  dsv4::DsmlBlock block_;
  State state_ = State::kOpen;
  std::string buf_;   // text from start_ on is unread (dropped lazily: a block can be long)
  size_t start_ = 0;
  size_t from_ = 0;   // no stop string starts in buf_ before this
  std::string name_;
  std::vector<Param> params_;
};

}  // namespace strata
