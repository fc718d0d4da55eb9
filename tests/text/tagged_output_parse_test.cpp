#include "text/tagged_output_parse.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "text/utf8.h"

namespace strata {
namespace {

using Json = nlohmann::ordered_json;

ParsedCompletion whole(const std::string& text, bool reasoning = false, const std::string& end = "") {
  TaggedOutputParser p(reasoning, end);
  p.feed(text);
  p.finish();
  return p.result();
}

// Feeds `text` in pieces of `step` bytes; checks that the events add up to result() and that
// every delta is whole UTF-8.
ParsedCompletion streamed(const std::string& text, size_t step, bool reasoning = false, const std::string& end = "") {
  TaggedOutputParser p(reasoning, end);
  ParsedCompletion got;
  auto take = [&](const std::vector<StreamEvent>& events) {
    for (const StreamEvent& e : events) {
      EXPECT_TRUE(utf8_valid(e.text)) << Json(e.text).dump();
      if (e.kind == StreamEvent::Kind::kReasoning) got.reasoning_content += e.text;
      if (e.kind == StreamEvent::Kind::kContent) got.content += e.text;
      if (e.kind == StreamEvent::Kind::kToolCall) got.tool_calls.push_back(e.tool_call);
    }
  };
  for (size_t i = 0; i < text.size(); i += step) take(p.feed(text.substr(i, step)));
  take(p.finish());
  EXPECT_EQ(got.to_json(), p.result().to_json());
  return got;
}

// The one-shot parse, checked against every streaming split.
ParsedCompletion parse(const std::string& text, bool reasoning = false, const std::string& end = "") {
  const ParsedCompletion w = whole(text, reasoning, end);
  for (size_t step : {size_t(1), size_t(2), size_t(3), size_t(7), size_t(13)})
    EXPECT_EQ(streamed(text, step, reasoning, end).to_json(), w.to_json()) << "step " << step;
  return w;
}

TEST(TaggedOutputParse, PlainContent) {
  const ParsedCompletion r = parse("Hello, world.\nSecond line.\n");
  EXPECT_EQ(r.content, "Hello, world.\nSecond line.\n");
  EXPECT_EQ(r.reasoning_content, "");
  EXPECT_TRUE(r.tool_calls.empty());
}

TEST(TaggedOutputParse, ReasoningFromThePromptsOpenThink) {
  const ParsedCompletion r = parse("\nLet me think.\nDone.\n</think>\n\nThe answer is 4.", true);
  EXPECT_EQ(r.reasoning_content, "Let me think.\nDone.");
  EXPECT_EQ(r.content, "The answer is 4.");
}

TEST(TaggedOutputParse, ReasoningOpenedByTheOutput) {
  const ParsedCompletion r = parse("<think>\nHmm.\n</think>\n\nHi!");
  EXPECT_EQ(r.reasoning_content, "Hmm.");
  EXPECT_EQ(r.content, "Hi!");
  // Qwen3 with thinking off: the prompt holds an empty think block, the output is content.
  EXPECT_EQ(parse("Just content <think> inside").content, "Just content <think> inside");
  // A reasoning model that repeats the prompt's <think>.
  EXPECT_EQ(parse("<think>\nr\n</think>\nc", true).reasoning_content, "r");
  // Cut short inside the reasoning: all of it is reasoning.
  const ParsedCompletion cut = parse("<think>\nstill thinking", false);
  EXPECT_EQ(cut.reasoning_content, "still thinking");
  EXPECT_EQ(cut.content, "");
}

TEST(TaggedOutputParse, ToolCalls) {
  const std::string text =
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\", \"days\": 3}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"é \\\"x\\\"\"}}\n</tool_call>";
  const ParsedCompletion r = parse(text);
  EXPECT_EQ(r.content, "Let me check.");
  ASSERT_EQ(r.tool_calls.size(), 2u);
  EXPECT_EQ(r.tool_calls[0].name, "get_weather");
  EXPECT_EQ(r.tool_calls[0].arguments, "{\"city\": \"Oslo\", \"days\": 3}");
  EXPECT_EQ(r.tool_calls[1].name, "search");
  EXPECT_EQ(Json::parse(r.tool_calls[1].arguments), Json::parse(R"({"query": "é \"x\""})"));
  // After reasoning, with no text between.
  const ParsedCompletion t = parse("I need the tool.</think>\n\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>", true);
  EXPECT_EQ(t.reasoning_content, "I need the tool.");
  EXPECT_EQ(t.content, "");
  ASSERT_EQ(t.tool_calls.size(), 1u);
  EXPECT_EQ(t.tool_calls[0].arguments, "{}");
  // arguments as a JSON string, or left out.
  EXPECT_EQ(parse("<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": 1}\"}</tool_call>").tool_calls.at(0).arguments, "{\"a\": 1}");
  EXPECT_EQ(parse("<tool_call>{\"name\": \"f\"}</tool_call>").tool_calls.at(0).arguments, "{}");
  // Text after the calls is content.
  EXPECT_EQ(parse("<tool_call>{\"name\": \"f\"}</tool_call>\nDone.").content, "Done.");
  // <tool_call> inside the reasoning is only text.
  const ParsedCompletion in_r = parse("maybe <tool_call> later</think>ok", true);
  EXPECT_EQ(in_r.reasoning_content, "maybe <tool_call> later");
  EXPECT_TRUE(in_r.tool_calls.empty());
}

// Malformed tool-call JSON is passed through as content, tags included.
TEST(TaggedOutputParse, MalformedToolCallsAreContent) {
  const ParsedCompletion bad = parse("A\n<tool_call>\n{\"name\": \"f\", \"arguments\": {oops}}\n</tool_call>\nB");
  EXPECT_TRUE(bad.tool_calls.empty());
  EXPECT_EQ(bad.content, "A<tool_call>\n{\"name\": \"f\", \"arguments\": {oops}}\n</tool_call>B");
  EXPECT_TRUE(parse("<tool_call>[1, 2]</tool_call>").tool_calls.empty());
  EXPECT_TRUE(parse("<tool_call>{\"arguments\": {}}</tool_call>").tool_calls.empty());
  EXPECT_TRUE(parse("<tool_call>{\"name\": \"f\", \"arguments\": 3}</tool_call>").tool_calls.empty());
  // Cut short: a complete JSON call still counts, anything else is content.
  EXPECT_EQ(parse("<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n").tool_calls.size(), 1u);
  const ParsedCompletion cut = parse("<tool_call>\n{\"name\": \"f\", \"argu");
  EXPECT_TRUE(cut.tool_calls.empty());
  EXPECT_EQ(cut.content, "<tool_call>\n{\"name\": \"f\", \"argu");
}

TEST(TaggedOutputParse, NewlinesBesideTagsAreSeparators) {
  EXPECT_EQ(parse("a\n\nb\n\n").content, "a\n\nb\n\n");  // not beside a tag: kept
  EXPECT_EQ(parse("a\n\n<tool_call>{\"name\": \"f\"}</tool_call>\n\n").content, "a");
  EXPECT_EQ(parse("r\n\n</think>\n\n\nc", true).reasoning_content, "r");
}

TEST(TaggedOutputParse, EndMarkerEndsTheOutput) {
  const ParsedCompletion r = parse("Hi!<|im_end|>\n<|im_start|>user\nmore", false, "<|im_end|>");
  EXPECT_EQ(r.content, "Hi!");
  EXPECT_EQ(parse("thinking<|im_end|>x", true, "<|im_end|>").reasoning_content, "thinking");
}

// A tag split anywhere across deltas never reaches the content as text.
TEST(TaggedOutputParse, SplitTagsNeverLeak) {
  const std::string text = "Héllo 😀\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": \"ü\"}}\n</tool_call>";
  for (size_t cut = 1; cut < text.size(); ++cut) {
    TaggedOutputParser p(false);
    std::string content;
    for (const std::string& piece : {text.substr(0, cut), text.substr(cut)})
      for (const StreamEvent& e : p.feed(piece))
        if (e.kind == StreamEvent::Kind::kContent) content += e.text;
    for (const StreamEvent& e : p.finish())
      if (e.kind == StreamEvent::Kind::kContent) content += e.text;
    EXPECT_EQ(content, "Héllo 😀") << "cut at " << cut;
    EXPECT_EQ(p.result().tool_calls.size(), 1u) << "cut at " << cut;
  }
}

TEST(TaggedOutputParse, FeedAfterFinishIsAnError) {
  TaggedOutputParser p(false);
  p.finish();
  EXPECT_THROW(p.feed("x"), Error);
  EXPECT_THROW(p.finish(), Error);
}

}  // namespace
}  // namespace strata
