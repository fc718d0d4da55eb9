#include "text/tagged_output_parse.h"

#include "core/error.h"
#include "text/marker_scan.h"
#include "text/py_json.h"
#include "text/utf8.h"

namespace strata {
namespace {

constexpr std::string_view kThinkOpen = "<think>";
constexpr std::string_view kThinkClose = "</think>";
constexpr std::string_view kToolOpen = "<tool_call>";
constexpr std::string_view kToolClose = "</tool_call>";

bool is_newline(char c) { return c == '\n' || c == '\r'; }

std::string_view trim_ascii(std::string_view s) {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

// {"name": "...", "arguments": {...}} to a call; false when the text is not such an object.
bool tool_call_of(std::string_view body, ToolCall& call) {
  const auto j = nlohmann::ordered_json::parse(trim_ascii(body), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return false;
  auto name = j.find("name");
  if (name == j.end() || !name->is_string() || name->get<std::string>().empty()) return false;
  auto args = j.find("arguments");
  if (args == j.end()) args = j.find("parameters");  // some Hermes-style models write this
  call.name = name->get<std::string>();
  if (args == j.end() || args->is_null()) call.arguments = "{}";
  else if (args->is_object()) call.arguments = py_json(*args);
  else if (args->is_string()) call.arguments = args->get<std::string>();
  else return false;
  return true;
}

}  // namespace

TaggedOutputParser::TaggedOutputParser(bool starts_in_reasoning, std::string end_marker)
    : state_(State::kStart),
      starts_in_reasoning_(starts_in_reasoning),
      end_marker_(std::move(end_marker)),
      skip_newlines_(starts_in_reasoning) {}

std::vector<StreamEvent> TaggedOutputParser::feed(std::string_view delta) {
  if (finished_) throw Error("output parser: feed() after finish()");
  std::vector<StreamEvent> events;
  buf_ += delta;
  run(false, events);
  return events;
}

std::vector<StreamEvent> TaggedOutputParser::finish() {
  if (finished_) throw Error("output parser: finish() called twice");
  finished_ = true;
  std::vector<StreamEvent> events;
  run(true, events);
  return events;
}

void TaggedOutputParser::push_event(StreamEvent::Kind kind, std::string_view text, std::vector<StreamEvent>& events) {
  if (text.empty()) return;
  (kind == StreamEvent::Kind::kReasoning ? result_.reasoning_content : result_.content) += text;
  if (!events.empty() && events.back().kind == kind) events.back().text += text;
  else events.push_back({kind, std::string(text), {}});
}

void TaggedOutputParser::emit(std::string_view text, bool at_end, std::vector<StreamEvent>& events) {
  std::string out = std::move(held_);
  held_.clear();
  out += text;
  if (!at_end) {
    size_t keep = out.size();
    while (keep > 0 && is_newline(out[keep - 1])) --keep;
    held_ = out.substr(keep);
    out.resize(keep);
  }
  push_event(state_ == State::kReasoning ? StreamEvent::Kind::kReasoning : StreamEvent::Kind::kContent, out, events);
}

void TaggedOutputParser::take_tool_call(std::string_view body, bool closed, std::vector<StreamEvent>& events) {
  ToolCall call;
  if (tool_call_of(body, call)) {
    result_.tool_calls.push_back(call);
    events.push_back({StreamEvent::Kind::kToolCall, {}, std::move(call)});
    return;
  }
  std::string raw = std::string(kToolOpen) + std::string(body);
  if (closed) raw += kToolClose;
  push_event(StreamEvent::Kind::kContent, raw, events);
}

void TaggedOutputParser::run(bool at_end, std::vector<StreamEvent>& events) {
  for (;;) {
    switch (state_) {
      case State::kStart:
        // The output may open its reasoning itself (or repeat the prompt's <think>).
        if (buf_.starts_with(kThinkOpen)) {
          buf_.erase(0, kThinkOpen.size());
          state_ = State::kReasoning;
          skip_newlines_ = true;
          break;
        }
        if (!at_end && kThinkOpen.starts_with(buf_)) return;
        state_ = starts_in_reasoning_ ? State::kReasoning : State::kContent;
        break;
      case State::kReasoning:
      case State::kContent: {
        if (skip_newlines_) {
          size_t n = 0;
          while (n < buf_.size() && is_newline(buf_[n])) ++n;
          buf_.erase(0, n);
          if (buf_.empty() && !at_end) return;
          skip_newlines_ = false;
        }
        const bool reasoning = state_ == State::kReasoning;
        const std::string_view tag = reasoning ? kThinkClose : kToolOpen;
        const MarkerHit hit = end_marker_.empty() ? scan_markers(buf_, 0, {tag}, at_end)
                                                  : scan_markers(buf_, 0, {tag, end_marker_}, at_end);
        size_t ready = hit.pos;
        if (hit.which < 0 && !at_end) ready -= utf8_incomplete_tail(std::string_view(buf_).substr(0, ready));
        emit(std::string_view(buf_).substr(0, ready), at_end && hit.which < 0, events);
        buf_.erase(0, ready);
        if (hit.which < 0) return;
        held_.clear();  // newlines before a tag separate, they are not text
        if (hit.which == 1) {
          buf_.clear();
          state_ = State::kEnded;
          return;
        }
        buf_.erase(0, hit.len);
        skip_newlines_ = true;
        state_ = reasoning ? State::kContent : State::kToolCall;
        break;
      }
      case State::kToolCall: {
        const size_t close = buf_.find(kToolClose);
        if (close == std::string::npos) {
          if (!at_end) return;
          take_tool_call(buf_, /*closed=*/false, events);
          buf_.clear();
          state_ = State::kContent;
          return;
        }
        take_tool_call(std::string_view(buf_).substr(0, close), /*closed=*/true, events);
        buf_.erase(0, close + kToolClose.size());
        skip_newlines_ = true;
        state_ = State::kContent;
        break;
      }
      case State::kEnded:
        buf_.clear();
        return;
    }
  }
}

}  // namespace strata
