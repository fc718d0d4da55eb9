// Model output parsing: DSML tool calls (DeepSeek-V4 and V3.2), <think> and <tool_call> tags
// (Jinja formats), fed as a stream in arbitrary pieces. Properties the parsers promise
// (text/chat_format.h, text/chat_parse.h): the events of every feed() and finish() add up to
// result(), and a stream cut anywhere parses exactly as the whole text does, including whether
// it is rejected.
// Model output reaches the parser as valid UTF-8 cut at character boundaries (the detokenizer
// holds back incomplete characters), and every delta the parser releases must be valid UTF-8
// too: the server writes each one into a JSON event.
// Input: one byte choosing the format and the start state, one seeding the cut points, then the
// model's output (made valid UTF-8).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "chat_formats.h"
#include "fuzz_input.h"
#include "text/utf8.h"

namespace {
struct Outcome {
  std::optional<std::string> json;  // result().to_json() when accepted
  std::string reasoning, content;   // the events' deltas
  std::vector<std::string> calls;   // the events' tool calls, as JSON
};

std::string call_json(const strata::ToolCall& c) {
  return nlohmann::ordered_json{{"name", c.name}, {"arguments", c.arguments}}.dump();
}

Outcome run(const strata::ChatFormat& f, bool reasoning, const std::string& text, uint8_t seed) {
  Outcome o;
  auto p = f.parser(reasoning);
  auto take = [&](const std::vector<strata::StreamEvent>& events) {
    for (const auto& e : events) {
      FUZZ_CHECK(strata::utf8_valid(e.text), "a delta that is not UTF-8: " + e.text);
      if (e.kind == strata::StreamEvent::Kind::kReasoning) o.reasoning += e.text;
      else if (e.kind == strata::StreamEvent::Kind::kContent) o.content += e.text;
      else o.calls.push_back(call_json(e.tool_call));
    }
  };
  try {
    // Cut points from a small linear congruential sequence: pieces of 0..15 bytes (0 = one
    // whole remaining piece when seed is 0).
    uint32_t x = seed;
    size_t at = 0;
    while (at < text.size()) {
      size_t n = seed ? (x >> 4) % 16 : text.size();
      x = x * 1103515245u + 12345u;
      if (n > text.size() - at) n = text.size() - at;
      while (at + n < text.size() && (uint8_t(text[at + n]) & 0xC0) == 0x80) ++n;
      take(p->feed(std::string_view(text).substr(at, n)));
      at += n;
    }
    take(p->finish());
    o.json = p->result().to_json().dump();
    const auto& r = p->result();
    FUZZ_CHECK(o.reasoning == r.reasoning_content, "reasoning events: " + o.reasoning + "\nresult: " + r.reasoning_content);
    FUZZ_CHECK(o.content == r.content, "content events: " + o.content + "\nresult: " + r.content);
    FUZZ_CHECK(o.calls.size() == r.tool_calls.size(), *o.json);
    for (size_t i = 0; i < o.calls.size(); ++i) FUZZ_CHECK(o.calls[i] == call_json(r.tool_calls[i]), *o.json);
  } catch (const strata::Error&) {
  }
  return o;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strata::fuzz::Input in(data, size);
  const uint8_t choice = in.byte();
  const uint8_t seed = in.byte() | 1;
  const std::string text = strata::utf8_sanitize(in.rest());
  const auto& formats = strata::fuzz::chat_formats();
  const auto& format = *formats[(choice >> 1) % formats.size()];
  const bool reasoning = choice & 1;
  const Outcome whole = run(format, reasoning, text, 0);
  const Outcome pieces = run(format, reasoning, text, seed);
  FUZZ_CHECK(whole.json == pieces.json, format.name() + ": whole " + whole.json.value_or("(rejected)") + "\npieces " +
                                            pieces.json.value_or("(rejected)"));
  try {
    const auto parsed = format.parse(text, reasoning);
    (void)parsed;
  } catch (const strata::Error&) {
  }
  return 0;
}
