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

// ---- rules, one by one ----

const std::string BOS = "<｜begin▁of▁sentence｜>";
const std::string EOS = "<｜end▁of▁sentence｜>";
const std::string U = "<｜User｜>";
const std::string A = "<｜Assistant｜>";
const std::string D = "｜DSML｜";
const std::string kAbsoluteMax = "Reasoning Effort: Absolute maximum with no shortcuts permitted.\n";
const std::string kBeyondMax = "Reasoning Effort: Beyond maximum — exhaustive, relentless, and uncompromising.\n";

Json msgs(std::string_view text) { return Json::parse(text); }

const Json kSystemUser = msgs(R"([{"role":"system","content":"S"},{"role":"user","content":"Q"}])");

TEST(ChatEncoding, ChatModeClosesThinkingAtOnce) {
  EXPECT_EQ(encode_chat(kSystemUser, mode("chat")), BOS + "S" + U + "Q" + A + "</think>");
}

TEST(ChatEncoding, ThinkingModeOpensThinking) {
  EXPECT_EQ(encode_chat(kSystemUser, mode("thinking")), BOS + "S" + U + "Q" + A + "<think>");
  EXPECT_EQ(encode_chat(msgs(R"([{"role":"user","content":"Q"}])"), mode("thinking")), BOS + U + "Q" + A + "<think>");
}

TEST(ChatEncoding, EmptyConversationIsJustBos) {
  EXPECT_EQ(encode_chat(Json::array(), mode("chat")), BOS);
}

TEST(ChatEncoding, PreviewEffortMaxIsThinkMaxPrefix) {
  const std::string out = encode_chat(kSystemUser, mode("thinking", "max"));
  ASSERT_EQ(out.rfind(BOS + kAbsoluteMax, 0), 0u);
  EXPECT_TRUE(out.ends_with("unchecked.\n\nS" + U + "Q" + A + "<think>"));
  // "high" is the preview's plain thinking; chat mode never gets a prefix.
  EXPECT_EQ(encode_chat(kSystemUser, mode("thinking", "high")), encode_chat(kSystemUser, mode("thinking")));
  EXPECT_EQ(encode_chat(kSystemUser, mode("chat", "max")), encode_chat(kSystemUser, mode("chat")));
  EXPECT_THROW(encode_chat(kSystemUser, mode("thinking", "low")), Error);
}

TEST(ChatEncoding, ReleaseEffortLevels) {
  ChatOptions o = mode("thinking");
  o.effort_prompts = EffortPrompts::kRelease0731;
  const std::string plain = encode_chat(kSystemUser, o);
  EXPECT_EQ(plain, BOS + "S" + U + "Q" + A + "<think>");
  o.reasoning_effort = "low";
  EXPECT_EQ(encode_chat(kSystemUser, o), plain);
  o.reasoning_effort = "high";
  EXPECT_EQ(encode_chat(kSystemUser, o).rfind(BOS + kAbsoluteMax, 0), 0u);
  o.reasoning_effort = "max";
  const std::string max = encode_chat(kSystemUser, o);
  EXPECT_EQ(max.rfind(BOS + kBeyondMax, 0), 0u);
  EXPECT_TRUE(max.ends_with("no error remains undiscovered.\n\nS" + U + "Q" + A + "<think>"));
  o.reasoning_effort = "medium";
  EXPECT_THROW(encode_chat(kSystemUser, o), Error);
}

const Json kTwoTurns = msgs(R"([
  {"role":"system","content":"S"},
  {"role":"user","content":"Q1"},
  {"role":"assistant","reasoning_content":"R1","content":"A1"},
  {"role":"user","content":"Q2"},
  {"role":"assistant","reasoning_content":"R2","content":"A2"}])");

TEST(ChatEncoding, EarlierReasoningDroppedWithoutTools) {
  EXPECT_EQ(encode_chat(kTwoTurns, mode("thinking")),
            BOS + "S" + U + "Q1" + A + "</think>A1" + EOS + U + "Q2" + A + "<think>R2</think>A2" + EOS);
}

TEST(ChatEncoding, ReasoningKeptWhenDropDisabled) {
  ChatOptions o = mode("thinking");
  o.drop_thinking = false;
  EXPECT_EQ(encode_chat(kTwoTurns, o),
            BOS + "S" + U + "Q1" + A + "<think>R1</think>A1" + EOS + U + "Q2" + A + "<think>R2</think>A2" + EOS);
}

TEST(ChatEncoding, ChatModeHasNoReasoning) {
  EXPECT_EQ(encode_chat(kTwoTurns, mode("chat")),
            BOS + "S" + U + "Q1" + A + "</think>A1" + EOS + U + "Q2" + A + "</think>A2" + EOS);
}

const Json kTool = msgs(R"([{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}])");

TEST(ChatEncoding, ReasoningKeptWithTools) {
  const std::string out = encode_chat(kTwoTurns, kTool, mode("thinking"));
  const std::string tools_end = "invoke tool calls.\n";
  ASSERT_NE(out.find(tools_end), std::string::npos);
  EXPECT_EQ(out.substr(out.find(tools_end) + tools_end.size()),
            U + "Q1" + A + "<think>R1</think>A1" + EOS + U + "Q2" + A + "<think>R2</think>A2" + EOS);
  EXPECT_EQ(out.rfind(BOS + "S\n\n## Tools\n\nYou have access to a set of tools", 0), 0u);
  EXPECT_NE(out.find("### Available Tool Schemas\n\n{\"name\": \"f\", \"parameters\": {\"type\": \"object\"}}\n\n"),
            std::string::npos);
}

TEST(ChatEncoding, ToolsWithoutSystemMessageGetAnEmptyOne) {
  const std::string out = encode_chat(msgs(R"([{"role":"user","content":"Q"}])"), kTool, mode("chat"));
  EXPECT_EQ(out.rfind(BOS + "\n\n## Tools\n\n", 0), 0u);
  EXPECT_TRUE(out.ends_with("invoke tool calls.\n" + U + "Q" + A + "</think>"));
}

TEST(ChatEncoding, DeveloperTurnBeforeLastUserIsDropped) {
  const Json m = msgs(R"([
    {"role":"developer","content":"DEV"},
    {"role":"assistant","reasoning_content":"R1","content":"A1"},
    {"role":"user","content":"Q2"}])");
  // The assistant turn then starts the prompt, without its reasoning and without "</think>".
  EXPECT_EQ(encode_chat(m, mode("thinking")), BOS + "A1" + EOS + U + "Q2" + A + "<think>");
  EXPECT_EQ(encode_chat(m, mode("chat")), BOS + U + "DEV" + A + "</think>A1" + EOS + U + "Q2" + A + "</think>");
}

TEST(ChatEncoding, DeveloperWithToolsAndResponseFormat) {
  const Json m = msgs(R"([{"role":"developer","content":"D","tools":[{"type":"function","function":{"name":"g"}}],
                          "response_format":{"type":"json_object"}}])");
  const std::string out = encode_chat(m, mode("chat"));
  EXPECT_EQ(out.rfind(BOS + U + "D\n\n## Tools\n\n", 0), 0u);
  EXPECT_TRUE(out.ends_with(
      "{\"name\": \"g\"}\n\nYou MUST strictly follow the above defined tool name and parameter schemas to invoke tool "
      "calls.\n\n\n## Response Format:\n\nYou MUST strictly adhere to the following schema to reply:\n"
      "{\"type\": \"json_object\"}" + A + "</think>"));
}

TEST(ChatEncoding, LatestReminderFollowsWithoutTransition) {
  const Json m = msgs(R"([{"role":"system","content":"S"},{"role":"latest_reminder","content":"2026-01-01"},
                          {"role":"user","content":"Q"},{"role":"latest_reminder","content":"R"}])");
  EXPECT_EQ(encode_chat(m, mode("chat")),
            BOS + "S<｜latest_reminder｜>2026-01-01" + U + "Q" + A + "</think><｜latest_reminder｜>R");
}

TEST(ChatEncoding, ToolCallsAsDsml) {
  const Json m = msgs(R"([{"role":"user","content":"Q"},
    {"role":"assistant","content":"Let me look.","reasoning_content":"R","tool_calls":[
      {"id":"c1","type":"function","function":{"name":"f","arguments":"{\"s\": \"a \\\"b\\\"\\n<c>\", \"n\": 3, \"x\": 1.50, \"b\": true, \"z\": null, \"o\": {\"k\": [1, \"中\", 1e16]}}"}},
      {"id":"c2","type":"function","function":{"name":"g","arguments":"{}"}},
      {"id":"c3","type":"function","function":{"name":"h","arguments":"not json"}}]}])");
  const std::string want =
      BOS + U + "Q" + A + "<think>R</think>Let me look.\n\n<" + D + "tool_calls>\n" +
      "<" + D + "invoke name=\"f\">\n" +
      "<" + D + "parameter name=\"s\" string=\"true\">a \"b\"\n<c></" + D + "parameter>\n" +
      "<" + D + "parameter name=\"n\" string=\"false\">3</" + D + "parameter>\n" +
      "<" + D + "parameter name=\"x\" string=\"false\">1.5</" + D + "parameter>\n" +
      "<" + D + "parameter name=\"b\" string=\"false\">true</" + D + "parameter>\n" +
      "<" + D + "parameter name=\"z\" string=\"false\">null</" + D + "parameter>\n" +
      "<" + D + "parameter name=\"o\" string=\"false\">{\"k\": [1, \"中\", 1e+16]}</" + D + "parameter>\n" +
      "</" + D + "invoke>\n" +
      "<" + D + "invoke name=\"g\">\n\n</" + D + "invoke>\n" +
      "<" + D + "invoke name=\"h\">\n" +
      "<" + D + "parameter name=\"arguments\" string=\"true\">not json</" + D + "parameter>\n" +
      "</" + D + "invoke>\n" +
      "</" + D + "tool_calls>" + EOS;
  EXPECT_EQ(encode_chat(m, mode("thinking")), want);
}

TEST(ChatEncoding, ToolResultsFoldIntoUserTurnInCallOrder) {
  const Json m = msgs(R"([{"role":"system","content":"S","tools":[{"type":"function","function":{"name":"f"}}]},
    {"role":"user","content":"Q"},
    {"role":"assistant","reasoning_content":"R1","tool_calls":[
      {"id":"a","type":"function","function":{"name":"f","arguments":"{\"i\": 1}"}},
      {"id":"b","type":"function","function":{"name":"f","arguments":"{\"i\": 2}"}}]},
    {"role":"tool","tool_call_id":"b","content":"two"},
    {"role":"tool","tool_call_id":"a","content":"one"},
    {"role":"user","content":"and?"},
    {"role":"assistant","reasoning_content":"R2","content":"done"}])");
  const std::string out = encode_chat(m, mode("thinking"));
  const std::string tail = U + "Q" + A + "<think>R1</think>\n\n<" + D + "tool_calls>\n<" + D + "invoke name=\"f\">\n<" +
                           D + "parameter name=\"i\" string=\"false\">1</" + D + "parameter>\n</" + D + "invoke>\n<" +
                           D + "invoke name=\"f\">\n<" + D + "parameter name=\"i\" string=\"false\">2</" + D +
                           "parameter>\n</" + D + "invoke>\n</" + D + "tool_calls>" + EOS + U +
                           "<tool_result>one</tool_result>\n\n<tool_result>two</tool_result>\n\nand?" + A +
                           "<think>R2</think>done" + EOS;
  EXPECT_TRUE(out.ends_with(tail)) << out;
}

TEST(ChatEncoding, MultiTurnToolUseWithoutToolsListStillDropsReasoning) {
  // Tool results without a tools list: the official rule keys on tools, not on tool messages.
  const Json m = msgs(R"([{"role":"user","content":"Q"},
    {"role":"assistant","reasoning_content":"R1","tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"}}]},
    {"role":"tool","content":"r"},
    {"role":"assistant","reasoning_content":"R2","content":"A"}])");
  EXPECT_EQ(encode_chat(m, mode("thinking")),
            BOS + U + "Q" + A + "</think>\n\n<" + D + "tool_calls>\n<" + D + "invoke name=\"f\">\n\n</" + D +
                "invoke>\n</" + D + "tool_calls>" + EOS + U + "<tool_result>r</tool_result>" + A +
                "<think>R2</think>A" + EOS);
}

TEST(ChatEncoding, ConsecutiveUserMessagesJoinOneTurn) {
  EXPECT_EQ(encode_chat(msgs(R"([{"role":"user","content":"a"},{"role":"user","content":"b"}])"), mode("chat")),
            BOS + U + "a\n\nb" + A + "</think>");
  // Not after a task turn; a later message's own task is lost in the join (official behaviour).
  EXPECT_EQ(encode_chat(msgs(R"([{"role":"user","content":"a","task":"query"},{"role":"user","content":"b"}])"),
                        mode("chat")),
            BOS + U + "a" + U + "b" + A + "</think>");
  EXPECT_EQ(encode_chat(msgs(R"([{"role":"user","content":"a"},{"role":"user","content":"b","task":"query"}])"),
                        mode("chat")),
            BOS + U + "a\n\nb" + A + "</think>");
}

TEST(ChatEncoding, QuickInstructionTasks) {
  EXPECT_EQ(encode_chat(msgs(R"([{"role":"user","content":"Q","task":"action"}])"), mode("thinking")),
            BOS + U + "Q" + A + "<think><｜action｜>");
  EXPECT_EQ(encode_chat(msgs(R"([{"role":"user","content":"Q","task":"query"}])"), mode("thinking")),
            BOS + U + "Q<｜query｜>");
  // The answer to a task has no thinking part; a title task follows the assistant turn.
  EXPECT_EQ(encode_chat(msgs(R"([{"role":"user","content":"Q","task":"domain"},{"role":"assistant","content":"med"}])"),
                        mode("thinking")),
            BOS + U + "Q<｜domain｜>med" + EOS);
  EXPECT_EQ(encode_chat(msgs(R"([{"role":"user","content":"Q"},{"role":"assistant","content":"A","task":"title"}])"),
                        mode("chat")),
            BOS + U + "Q" + A + "</think>A" + EOS + "<｜title｜>");
}

TEST(ChatEncoding, PrefixOptions) {
  const Json m = msgs(R"([{"role":"user","content":"Q"},{"role":"assistant","content":"partial","wo_eos":true}])");
  EXPECT_EQ(encode_chat(m, mode("chat")), BOS + U + "Q" + A + "</think>partial");
  ChatOptions o = mode("chat");
  o.add_bos = false;
  o.add_generation_prompt = false;
  EXPECT_EQ(encode_chat(kSystemUser, o), "S" + U + "Q");
}

TEST(ChatEncoding, ContentPartsJoinWithBlankLines) {
  const Json m = msgs(R"([{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},
                          {"role":"assistant","content":null,"tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"}}]},
                          {"role":"tool","content":[{"type":"text","text":"t"},{"type":"image_url"}]}])");
  EXPECT_EQ(encode_chat(m, mode("chat")),
            BOS + U + "a\n\nb" + A + "</think>\n\n<" + D + "tool_calls>\n<" + D + "invoke name=\"f\">\n\n</" + D +
                "invoke>\n</" + D + "tool_calls>" + EOS + U + "<tool_result>t\n\n[Unsupported image_url]</tool_result>" + A +
                "</think>");
}

TEST(ChatEncoding, ToolSchemaKeepsKeyOrderAndPythonSpacing) {
  const Json tools = msgs(R"([{"type":"function","function":{"name":"z","description":"é\"\n","parameters":{"b":1,"a":[true,null,2.0]}}}])");
  const std::string out = encode_chat(msgs(R"([{"role":"system","content":""}])"), tools, mode("chat"));
  EXPECT_NE(out.find(R"({"name": "z", "description": "é\"\n", "parameters": {"b": 1, "a": [true, null, 2.0]}})"),
            std::string::npos);
}

void expect_error(const char* messages, const char* what, const Json& tools = nullptr) {
  try {
    encode_chat(Json::parse(messages), tools, mode("thinking"));
    ADD_FAILURE() << "no error for " << messages;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(ChatEncoding, MalformedMessagesAreErrors) {
  expect_error(R"({"role":"user"})", "messages must be an array");
  expect_error(R"(["hi"])", "messages[0]: a message must be an object");
  expect_error(R"([{"content":"x"}])", "messages[0]: missing role");
  expect_error(R"([{"role":"robot","content":"x"}])", "unknown role 'robot'");
  expect_error(R"([{"role":"user"}])", "missing content");
  expect_error(R"([{"role":"user","content":null}])", "missing content");
  expect_error(R"([{"role":"user","content":5}])", "content must be a string");
  expect_error(R"([{"role":"user","content":[{"type":"image_url"}]}])", "not supported");
  expect_error(R"([{"role":"developer","content":""}])", "developer content must not be empty");
  expect_error(R"([{"role":"user","content":"x","task":"nope"}])", "unknown task");
  expect_error(R"([{"role":"user","content":"x","tools":[]}])", "only allowed on system or developer");
  expect_error(R"([{"role":"system","content":"x","tools":[{"type":"function"}]}])", "\"function\" object");
  expect_error(R"([{"role":"system","content":"x","tools":{}}])", "tools must be an array");
  expect_error(R"([{"role":"user","content":"x","tool_calls":[]}])", "only allowed on assistant");
  expect_error(R"([{"role":"assistant","tool_calls":{}}])", "tool_calls must be an array");
  expect_error(R"([{"role":"assistant","tool_calls":[{"type":"function"}]}])", "\"function\" object");
  expect_error(R"([{"role":"assistant","tool_calls":[{"function":{"arguments":"{}"}}]}])", "string function.name");
  expect_error(R"([{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":{"a":1}}}]}])",
               "arguments must be a JSON string");
  expect_error(R"([{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"[1]"}}]}])",
               "messages[0]: tool call 'f': arguments must be a JSON object");
  expect_error(R"([{"role":"assistant","reasoning_content":7}])", "reasoning_content must be a string");
  expect_error(R"([{"role":"system","content":"x","tools":[{"type":"function","function":{"name":"f"}}]}])",
               "both in the request and on messages[0]", kTool);
  ChatOptions bad = mode("fast");
  EXPECT_THROW(encode_chat(kSystemUser, bad), Error);
}

}  // namespace
}  // namespace strata
