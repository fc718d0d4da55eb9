#include "text/chat_parse.h"

#include "core/error.h"
#include "text/dsv4_tokens.h"
#include "text/marker_scan.h"
#include "text/utf8.h"

namespace strata {

using namespace dsv4;

nlohmann::ordered_json ParsedCompletion::to_json() const {
  nlohmann::ordered_json calls = nlohmann::ordered_json::array();
  for (const ToolCall& c : tool_calls)
    calls.push_back({{"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
  return {{"role", "assistant"}, {"content", content}, {"reasoning_content", reasoning_content}, {"tool_calls", calls}};
}

ParsedCompletion parse_completion(std::string_view text, bool thinking, const dsv4::DsmlBlock& block) {
  StreamingParser parser(thinking, block);
  parser.feed(text);
  parser.finish();
  return parser.result();
}

StreamingParser::StreamingParser(bool thinking, const dsv4::DsmlBlock& block)
    : state_(thinking ? State::kReasoning : State::kContent), block_start_(block.start), dsml_(block) {}

std::vector<StreamEvent> StreamingParser::feed(std::string_view delta) {
  if (finished_) throw Error("completion parser: feed() after finish()");
  std::vector<StreamEvent> events;
  buf_ += delta;
  run(false, events);
  return events;
}

std::vector<StreamEvent> StreamingParser::finish() {
  if (finished_) throw Error("completion parser: finish() called twice");
  finished_ = true;
  std::vector<StreamEvent> events;
  run(true, events);
  return events;
}

void StreamingParser::emit_text(std::string_view text, std::vector<StreamEvent>& events) {
  if (text.empty()) return;
  const bool reasoning = state_ == State::kReasoning;
  (reasoning ? result_.reasoning_content : result_.content) += text;
  if (!events.empty() && events.back().kind == (reasoning ? StreamEvent::Kind::kReasoning : StreamEvent::Kind::kContent))
    events.back().text += text;
  else
    events.push_back({reasoning ? StreamEvent::Kind::kReasoning : StreamEvent::Kind::kContent, std::string(text), {}});
}

void StreamingParser::take_tool_calls(std::vector<StreamEvent>& events) {
  for (ToolCall& c : new_calls_) {
    result_.tool_calls.push_back(c);
    events.push_back({StreamEvent::Kind::kToolCall, {}, std::move(c)});
  }
  new_calls_.clear();
}

// Mirrors the official reads: reasoning up to </think>, content up to EOS or the tool-call
// block, the block itself, then nothing but EOS. Special tokens that the official parser
// forbids inside reasoning/content are markers here too, so they fail as soon as they appear.
void StreamingParser::run(bool at_end, std::vector<StreamEvent>& events) {
  for (;;) {
    switch (state_) {
      case State::kReasoning:
      case State::kContent: {
        const bool reasoning = state_ == State::kReasoning;
        // Index 0 ends this part, index 1 starts a tool-call block; the rest are forbidden here.
        const MarkerHit hit =
            reasoning ? scan_markers(buf_, 0, {kThinkEnd, block_start_, kBos, kEos, kThinkStart, kDsml}, at_end)
                      : scan_markers(buf_, 0, {kEos, block_start_, kBos, kThinkStart, kThinkEnd, kDsml}, at_end);
        size_t ready = hit.pos;
        // Deltas end on character boundaries (byte-level tokens can split a character).
        if (hit.which < 0 && !at_end) ready -= utf8_incomplete_tail(std::string_view(buf_).substr(0, ready));
        emit_text(std::string_view(buf_).substr(0, ready), events);
        buf_.erase(0, ready);
        if (hit.which < 0) {
          if (!at_end) return;
          throw Error(reasoning ? "completion: reasoning is missing </think>"
                                : "completion: missing <｜end▁of▁sentence｜>");
        }
        if (hit.which == 1 && reasoning) throw Error("completion: tool calls before </think>");
        if (hit.which >= 2) throw Error("completion: unexpected special token in " +
                                        std::string(reasoning ? "reasoning" : "content"));
        buf_.erase(0, hit.len);
        state_ = hit.which == 0 ? (reasoning ? State::kContent : State::kEnded) : State::kToolCalls;
        break;
      }
      case State::kToolCalls: {
        dsml_.feed(buf_, new_calls_);
        buf_.clear();
        if (!dsml_.closed() && at_end) dsml_.finish(new_calls_);
        take_tool_calls(events);
        if (!dsml_.closed()) {
          if (at_end) state_ = State::kEnded;  // a block cut short still parses (official rules)
          return;
        }
        buf_ = dsml_.rest();
        state_ = State::kAfterToolCalls;
        break;
      }
      case State::kAfterToolCalls:
        if (buf_.starts_with(kEos)) {
          buf_.erase(0, kEos.size());
          state_ = State::kEnded;
          break;
        }
        if (!kEos.starts_with(buf_) || (at_end && !buf_.empty()))
          throw Error("completion: unexpected content after tool calls");
        return;
      case State::kEnded:
        if (!buf_.empty()) throw Error("completion: unexpected text after <｜end▁of▁sentence｜>");
        return;
    }
  }
}

}  // namespace strata
