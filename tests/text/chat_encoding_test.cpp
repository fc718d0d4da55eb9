#include "text/chat_encoding.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/error.h"
#include "text/chat_parse.h"

namespace strata {
namespace {

using Json = nlohmann::ordered_json;

const std::string kDir = STRATA_SHARED_DIR "/conformance/deepseek-v4-encoding/";

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f.good()) << path;
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

ChatOptions mode(const std::string& thinking_mode, const std::string& effort = "") {
  ChatOptions o;
  o.thinking_mode = thinking_mode;
  o.reasoning_effort = effort;
  return o;
}

// ---- official conformance vectors ----

TEST(ChatEncodingConformance, EveryCaseByteIdentical) {
  const Json manifest = Json::parse(read_file(kDir + "MANIFEST.json"));
  ASSERT_EQ(manifest["cases"].size(), 4u);
  for (const Json& c : manifest["cases"]) {
    SCOPED_TRACE(c["input"].get<std::string>());
    Json input = Json::parse(read_file(kDir + c["input"].get<std::string>()));
    const std::string want = read_file(kDir + c["output"].get<std::string>());
    const ChatOptions opts = mode(c["thinking_mode"]);
    if (input.is_object()) {
      // Tools given beside the messages, and the same tools attached to the system message.
      EXPECT_EQ(encode_chat(input["messages"], input["tools"], opts), want);
      Json messages = input["messages"];
      messages[0]["tools"] = input["tools"];
      EXPECT_EQ(encode_chat(messages, opts), want);
    } else {
      EXPECT_EQ(encode_chat(input, opts), want);
    }
  }
}

// Cases 1 and 2: the assistant turns of the produced prompt parse back to the messages.
TEST(ChatEncodingConformance, AssistantTurnsParseBack) {
  const std::string marker = "<｜Assistant｜><think>";
  {
    const std::string prompt = read_file(kDir + "test_output_1.txt");
    const size_t first = prompt.find(marker) + marker.size();
    const size_t first_end = prompt.find("<｜User｜>", first);
    const ParsedCompletion tc = parse_completion(prompt.substr(first, first_end - first), true);
    EXPECT_EQ(tc.reasoning_content, "The user wants to know the weather in Beijing. I should use the get_weather tool.");
    EXPECT_EQ(tc.content, "");
    ASSERT_EQ(tc.tool_calls.size(), 1u);
    EXPECT_EQ(tc.tool_calls[0].name, "get_weather");
    EXPECT_EQ(tc.tool_calls[0].arguments, R"({"location": "Beijing", "unit": "celsius"})");
    const ParsedCompletion last = parse_completion(prompt.substr(prompt.rfind(marker) + marker.size()), true);
    EXPECT_EQ(last.reasoning_content, "Got the weather data. Let me format a nice response.");
    EXPECT_EQ(last.content, "The weather in Beijing is currently sunny with a temperature of 22°C and 45% humidity.");
    EXPECT_TRUE(last.tool_calls.empty());
  }
  {
    const std::string prompt = read_file(kDir + "test_output_2.txt");
    const ParsedCompletion last = parse_completion(prompt.substr(prompt.rfind(marker) + marker.size()), true);
    EXPECT_EQ(last.reasoning_content, "The user asks about the capital of France. It is Paris.");
    EXPECT_EQ(last.content, "The capital of France is Paris.");
    EXPECT_TRUE(last.tool_calls.empty());
    EXPECT_EQ(prompt.find("The user said hello"), std::string::npos);
    // The earlier turn was written without reasoning; it parses back to its content.
    const std::string early = "<｜Assistant｜></think>";
    const size_t at = prompt.find(early) + early.size();
    const size_t end = prompt.find("<｜User｜>", at);
    EXPECT_EQ(parse_completion(prompt.substr(at, end - at), false).content, "Hi there! How can I help you?");
  }
}

}  // namespace
}  // namespace strata
