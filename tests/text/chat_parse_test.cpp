#include "text/chat_parse.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "text/chat_encoding.h"

namespace strata {
namespace {

using Json = nlohmann::ordered_json;

const std::string EOS = "<｜end▁of▁sentence｜>";
const std::string D = "｜DSML｜";
const std::string kStart = "\n\n<" + D + "tool_calls>\n";
const std::string kEnd = "</" + D + "tool_calls>";

std::string invoke(const std::string& name, const std::string& params) {
  return "<" + D + "invoke name=\"" + name + "\">\n" + params + "</" + D + "invoke>\n";
}
std::string param(const std::string& name, bool is_string, const std::string& value) {
  return "<" + D + "parameter name=\"" + name + "\" string=\"" + (is_string ? "true" : "false") + "\">" + value + "</" +
         D + "parameter>\n";
}

// Feeds the text one byte at a time and collects the events.
ParsedCompletion stream_bytewise(std::string_view text, bool thinking, std::vector<StreamEvent>* all = nullptr) {
  StreamingParser p(thinking);
  ParsedCompletion got;
  auto take = [&](std::vector<StreamEvent> events) {
    for (StreamEvent& e : events) {
      if (e.kind == StreamEvent::Kind::kReasoning) got.reasoning_content += e.text;
      if (e.kind == StreamEvent::Kind::kContent) got.content += e.text;
      if (e.kind == StreamEvent::Kind::kToolCall) got.tool_calls.push_back(e.tool_call);
      if (all) all->push_back(std::move(e));
    }
  };
  for (size_t i = 0; i < text.size(); ++i) take(p.feed(text.substr(i, 1)));
  take(p.finish());
  EXPECT_EQ(got.to_json(), p.result().to_json());
  return got;
}

// parse_completion and the byte-by-byte stream must agree, in results and in failing.
ParsedCompletion parse_both(const std::string& text, bool thinking) {
  const ParsedCompletion whole = parse_completion(text, thinking);
  EXPECT_EQ(stream_bytewise(text, thinking).to_json(), whole.to_json());
  return whole;
}

void expect_rejected(const std::string& text, bool thinking) {
  EXPECT_THROW(parse_completion(text, thinking), Error) << text;
  EXPECT_THROW(stream_bytewise(text, thinking), Error) << text;
}

TEST(ChatParse, ThinkingReasoningThenContent) {
  const ParsedCompletion p = parse_both("Simple arithmetic.</think>2 + 2 = 4." + EOS, true);
  EXPECT_EQ(p.reasoning_content, "Simple arithmetic.");
  EXPECT_EQ(p.content, "2 + 2 = 4.");
  EXPECT_TRUE(p.tool_calls.empty());
  EXPECT_EQ(p.to_json().dump(),
            R"({"role":"assistant","content":"2 + 2 = 4.","reasoning_content":"Simple arithmetic.","tool_calls":[]})");
}

TEST(ChatParse, ChatModeIsAllContent) {
  const ParsedCompletion p = parse_both("Hi <b>there</b>\n\n<tool_calls>not dsml" + EOS, false);
  EXPECT_EQ(p.reasoning_content, "");
  EXPECT_EQ(p.content, "Hi <b>there</b>\n\n<tool_calls>not dsml");
}

TEST(ChatParse, DsmlStringAndJsonParameters) {
  const std::string text = "R</think>Checking." + kStart +
                           invoke("get_weather", param("city", true, "São \"Paulo\"\nBR") + param("days", false, "3") +
                                                     param("opts", false, R"({"units": ["c", "f"], "deep": {"x": null}})") +
                                                     param("ok", false, "true")) +
                           invoke("search", param("q", true, "{\"not\": \"parsed\"}")) + kEnd + EOS;
  const ParsedCompletion p = parse_both(text, true);
  EXPECT_EQ(p.reasoning_content, "R");
  EXPECT_EQ(p.content, "Checking.");
  ASSERT_EQ(p.tool_calls.size(), 2u);
  EXPECT_EQ(p.tool_calls[0].name, "get_weather");
  EXPECT_EQ(p.tool_calls[0].arguments,
            R"({"city": "São \"Paulo\"\nBR", "days": 3, "opts": {"units": ["c", "f"], "deep": {"x": null}}, "ok": true})");
  EXPECT_EQ(Json::parse(p.tool_calls[0].arguments)["opts"]["units"][1], "f");
  EXPECT_EQ(p.tool_calls[1].arguments, R"({"q": "{\"not\": \"parsed\"}"})");
  const Json j = p.to_json();
  EXPECT_EQ(j["tool_calls"][1]["type"], "function");
  EXPECT_EQ(j["tool_calls"][1]["function"]["name"], "search");
}

TEST(ChatParse, NonStringValuesArePastedVerbatim) {
  // The official decoder does not check string="false" values; neither do we.
  const ParsedCompletion p = parse_both(kStart.substr(0) + invoke("f", param("x", false, "[1, oops")) + kEnd + EOS, false);
  EXPECT_EQ(p.tool_calls.at(0).arguments, R"({"x": [1, oops})");
}

TEST(ChatParse, InvokeWithoutParameters) {
  const ParsedCompletion p = parse_both(kStart + "<" + D + "invoke name=\"now\">\n\n</" + D + "invoke>\n" + kEnd + EOS, false);
  ASSERT_EQ(p.tool_calls.size(), 1u);
  EXPECT_EQ(p.tool_calls[0].name, "now");
  EXPECT_EQ(p.tool_calls[0].arguments, "{}");
}

TEST(ChatParse, BlockCutShortStillParses) {
  // Generation stopped inside the block: the official reader accepts a complete name or a
  // complete last parameter, and no EOS.
  const std::string head = kStart + "<" + D + "invoke name=\"f\">\n" + param("a", true, "1");
  EXPECT_EQ(parse_both(head, false).tool_calls.at(0).arguments, R"({"a": "1"})");
  EXPECT_EQ(parse_both(kStart + "<" + D + "invoke name=\"f\">\n", false).tool_calls.at(0).arguments, "{}");
  EXPECT_TRUE(parse_both(kStart.substr(0, kStart.size() - 2), false).tool_calls.empty());
  expect_rejected(head + "<" + D + "parameter name=\"b\" string=\"true\">unfinished", false);
}

TEST(ChatParse, RoundTripsEncodedToolCalls) {
  const Json messages = Json::parse(R"([{"role":"user","content":"Q"},
    {"role":"assistant","reasoning_content":"think","content":"text","tool_calls":[
      {"type":"function","function":{"name":"f","arguments":"{\"s\": \"x<y>\\n\", \"n\": -1.25, \"l\": [1, {\"a\": \"中\"}], \"e\": {}}"}},
      {"type":"function","function":{"name":"g","arguments":"{}"}}]}])");
  ChatOptions o;
  o.drop_thinking = false;
  const std::string prompt = encode_chat(messages, o);
  const std::string head = encode_chat(Json::array({messages[0]}), o);
  ASSERT_EQ(prompt.rfind(head, 0), 0u);
  const ParsedCompletion p = parse_both(prompt.substr(head.size()), true);
  EXPECT_EQ(p.reasoning_content, "think");
  EXPECT_EQ(p.content, "text");
  ASSERT_EQ(p.tool_calls.size(), 2u);
  EXPECT_EQ(p.tool_calls[0].arguments, messages[1]["tool_calls"][0]["function"]["arguments"]);
  EXPECT_EQ(p.tool_calls[1].arguments, "{}");
}

TEST(ChatParse, MalformedOutputIsRejected) {
  expect_rejected("no end of thinking" + EOS, true);                       // missing </think>
  expect_rejected("R</think>no eos", true);                                // missing EOS
  expect_rejected("answer" + EOS + "more", false);                         // text after the end
  expect_rejected("R" + kStart + invoke("f", "") + kEnd + EOS, true);      // tool calls inside reasoning
  expect_rejected("a<think>b" + EOS, false);                               // special token in content
  expect_rejected("a</think>b" + EOS, false);
  expect_rejected("R<think></think>b" + EOS, true);                        // and in reasoning
  expect_rejected("a <" + D + "invoke name=\"f\">" + EOS, false);          // DSML outside a block
  expect_rejected("<｜begin▁of▁sentence｜>" + EOS, false);
  // Malformed DSML inside a block.
  expect_rejected(kStart + invoke("f", param("a", true, "1") + param("a", true, "2")) + kEnd + EOS, false);  // dup
  expect_rejected(kStart + invoke("f", "<" + D + "parameter name=\"a\">1</" + D + "parameter>\n") + kEnd + EOS, false);
  expect_rejected(kStart + invoke("f", "<" + D + "parameter name=\"a\" string=\"yes\">1</" + D + "parameter>\n") + kEnd + EOS,
                  false);
  expect_rejected(kStart + "<" + D + "invoke nom=\"f\">\n</" + D + "invoke>\n" + kEnd + EOS, false);
  expect_rejected(kStart + invoke("f", "") + "junk\n" + kEnd + EOS, false);
  expect_rejected(kStart + invoke("f", param("a", true, "1")) + kEnd + "tail" + EOS, false);
  expect_rejected("\n\n<" + D + "tool_calls>" + invoke("f", "") + kEnd + EOS, false);  // no newline after the tag
}

TEST(ChatParse, WhitespaceQuirksOfTheOfficialPatterns) {
  // Leading whitespace before name= and a newline after a parameter's closing '<' are allowed.
  const std::string text = kStart + "<" + D + "invoke \t name=\"f\">\n<" + D + "parameter name=\"a\" string=\"true\">v<\n/" +
                           D + "parameter>\n</" + D + "invoke>\n" + kEnd + EOS;
  EXPECT_EQ(parse_both(text, false).tool_calls.at(0).arguments, R"({"a": "v"})");
}

TEST(StreamingParser, HoldsBackPartialMarkers) {
  StreamingParser p(false);
  auto text_of = [](const std::vector<StreamEvent>& ev) {
    std::string s;
    for (const StreamEvent& e : ev) s += e.text;
    return s;
  };
  EXPECT_EQ(text_of(p.feed("Hello <")), "Hello ");
  EXPECT_EQ(text_of(p.feed("b> <｜end▁of▁sen")), "<b> ");
  EXPECT_FALSE(p.ended());
  EXPECT_EQ(text_of(p.feed("tence｜>")), "");
  EXPECT_TRUE(p.ended());
  EXPECT_TRUE(p.finish().empty());
  EXPECT_EQ(p.result().content, "Hello <b> ");
}

TEST(StreamingParser, HoldsBackASplitToolCallStartAndUtf8) {
  StreamingParser p(true);
  std::vector<StreamEvent> ev = p.feed("思");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].kind, StreamEvent::Kind::kReasoning);
  const std::string zhong = "中";
  EXPECT_TRUE(p.feed(zhong.substr(0, 2)).empty());  // half a character waits
  ev = p.feed(zhong.substr(2) + "</thi");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].text, "中");
  ev = p.feed("nk>Sure.\n\n<" + D + "tool_ca");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].kind, StreamEvent::Kind::kContent);
  EXPECT_EQ(ev[0].text, "Sure.");
  EXPECT_TRUE(p.feed("lls>\n" + invoke("f", param("a", true, "1")).substr(0, 20)).empty());
}

TEST(StreamingParser, ToolCallReleasedWhenItsInvokeCloses) {
  StreamingParser p(false);
  p.feed(kStart);
  EXPECT_TRUE(p.feed(invoke("f", param("a", false, "1")).substr(0, 40)).empty());
  std::vector<StreamEvent> ev = p.feed(invoke("f", param("a", false, "1")).substr(40));
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].kind, StreamEvent::Kind::kToolCall);
  EXPECT_EQ(ev[0].tool_call.arguments, R"({"a": 1})");
  ev = p.feed(invoke("g", "") + kEnd + EOS);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].tool_call.name, "g");
  EXPECT_TRUE(p.ended());
  EXPECT_EQ(p.result().tool_calls.size(), 2u);
  EXPECT_THROW(p.feed("x"), Error);  // nothing may follow the end
}

TEST(StreamingParser, ByteAtATimeEqualsWholeText) {
  const std::vector<std::pair<std::string, bool>> cases = {
      {"R \n\n<x></think>C" + EOS, true},
      {"</think>" + kStart + invoke("f", param("q", true, "中文 <｜") + param("n", false, "[1, 2]")) + kEnd + EOS, true},
      {"C <｜User｜> < ｜ \n\n<｜DSM" + EOS, false},
      {"" + EOS, false},
      {"</think>" + EOS, true},
  };
  for (const auto& [text, thinking] : cases) {
    SCOPED_TRACE(text);
    std::vector<StreamEvent> events;
    const ParsedCompletion streamed = stream_bytewise(text, thinking, &events);
    EXPECT_EQ(streamed.to_json(), parse_completion(text, thinking).to_json());
    for (const StreamEvent& e : events) {
      // No delta carries a piece of a special marker or half a character.
      EXPECT_EQ(e.text.find("<｜end"), std::string::npos);
      EXPECT_EQ(e.text.find("</th"), std::string::npos);
      if (!e.text.empty()) {
        EXPECT_NE(static_cast<unsigned char>(e.text.back()) & 0xC0, 0x80u);
      }
    }
  }
}

TEST(StreamingParser, LongBlockInChunks) {
  std::string text = "intro" + kStart;
  for (int i = 0; i < 300; ++i) {
    std::string name = "f";  // not "f" + to_string(i): GCC 12 -O3 gives a false -Wrestrict there
    name += std::to_string(i);
    text += invoke(name, param("i", false, std::to_string(i)) + param("s", true, std::string(i, 'x')));
  }
  text += kEnd + EOS;
  StreamingParser p(false);
  size_t calls = 0;
  for (size_t i = 0; i < text.size(); i += 97)
    for (const StreamEvent& e : p.feed(std::string_view(text).substr(i, 97))) calls += e.kind == StreamEvent::Kind::kToolCall;
  p.finish();
  EXPECT_EQ(calls, 300u);
  EXPECT_EQ(p.result().to_json(), parse_completion(text, false).to_json());
  EXPECT_EQ(p.result().tool_calls[299].arguments, R"({"i": 299, "s": ")" + std::string(299, 'x') + "\"}");
}

TEST(StreamingParser, UsageErrors) {
  StreamingParser p(false);
  p.feed("a" + EOS);
  p.finish();
  EXPECT_THROW(p.finish(), Error);
  EXPECT_THROW(p.feed("b"), Error);
}

}  // namespace
}  // namespace strata
