// DeepSeek-V3.2's chat encoding and output parsing (text/dsv32_chat_encoding.h,
// deepseek_v32_chat_format), against prompts written out from the rules of DeepSeek's
// encoding/encoding_dsv32.py (no official test vectors are at hand): user turns closing with
// <think> or </think>, reasoning kept after the last user turn only, <function_results> tool
// turns, <｜DSML｜function_calls> blocks, developer turns, and the errors the official encoder
// raises.
#include "text/dsv32_chat_encoding.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "text/chat_format.h"

namespace strata {
namespace {

using json = nlohmann::ordered_json;

const std::string kBos = "<｜begin▁of▁sentence｜>", kEos = "<｜end▁of▁sentence｜>";

std::string encode(const json& messages, bool thinking, const json& tools = nullptr, bool drop = true) {
  Dsv32ChatOptions o;
  o.thinking = thinking;
  o.drop_thinking = drop;
  return encode_chat_dsv32(messages, tools, o);
}

const json kTools = json::parse(R"([{"type":"function","function":{"name":"get_weather","description":"Météo",
  "parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}])");
const std::string kFunctionsLine =
    "<functions>\n{\"name\": \"get_weather\", \"description\": \"Météo\", \"parameters\": {\"type\": \"object\", "
    "\"properties\": {\"city\": {\"type\": \"string\"}}}}\n</functions>\n";

json weather_call(const std::string& args) {
  return {{"type", "function"}, {"id", "c1"}, {"function", {{"name", "get_weather"}, {"arguments", args}}}};
}

// The official README's example: in thinking mode only the last user turn opens <think>, and
// an assistant turn before it shows no reasoning.
TEST(Dsv32ChatEncoding, ThinkingModeOpensOnlyTheLastUserTurn) {
  const json messages = json::parse(R"([{"role":"user","content":"hello"},
    {"role":"assistant","content":"Hello! I am DeepSeek.","reasoning_content":"thinking..."},
    {"role":"user","content":"1+1=?"}])");
  EXPECT_EQ(encode(messages, true),
            kBos + "<｜User｜>hello<｜Assistant｜></think>Hello! I am DeepSeek." + kEos +
                "<｜User｜>1+1=?<｜Assistant｜><think>");
  EXPECT_EQ(encode(messages, false),
            kBos + "<｜User｜>hello<｜Assistant｜></think>Hello! I am DeepSeek." + kEos +
                "<｜User｜>1+1=?<｜Assistant｜></think>");
}

TEST(Dsv32ChatEncoding, SystemToolsCallsAndResults) {
  const json messages = json::array(
      {{{"role", "system"}, {"content", "Be brief."}},
       {{"role", "user"}, {"content", "Weather in Paris and Oslo?"}},
       {{"role", "assistant"},
        {"content", ""},
        {"reasoning_content", "Two cities."},
        {"tool_calls", {weather_call(R"({"city": "Paris", "days": 2})"), weather_call(R"({"city": "Oslo"})")}}},
       {{"role", "tool"}, {"tool_call_id", "c1"}, {"content", "sunny"}},
       {{"role", "tool"}, {"tool_call_id", "c1"}, {"content", "snow"}}});
  const std::string out = encode(messages, true, kTools);
  const std::string head = kBos + "Be brief.\n\n## Tools\nYou have access to a set of tools you can use to answer the "
                                  "user's question.\n";
  EXPECT_EQ(out.substr(0, head.size()), head);
  const std::string tail =
      kFunctionsLine + "<｜User｜>Weather in Paris and Oslo?<｜Assistant｜><think>Two cities.</think>" +
      "\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"get_weather\">\n"
      "<｜DSML｜parameter name=\"city\" string=\"true\">Paris</｜DSML｜parameter>\n"
      "<｜DSML｜parameter name=\"days\" string=\"false\">2</｜DSML｜parameter>\n</｜DSML｜invoke>\n"
      "<｜DSML｜invoke name=\"get_weather\">\n<｜DSML｜parameter name=\"city\" string=\"true\">Oslo</｜DSML｜parameter>\n"
      "</｜DSML｜invoke>\n</｜DSML｜function_calls>" +
      kEos + "\n\n<function_results>\n<result>sunny</result>\n<result>snow</result>\n</function_results>\n\n<think>";
  ASSERT_GE(out.size(), tail.size());
  EXPECT_EQ(out.substr(out.size() - tail.size()), tail);
  // The tools section sits between the system text and the functions list.
  EXPECT_NE(out.find("\"<｜DSML｜function_calls>\" block"), std::string::npos);
  EXPECT_NE(out.find("<think>...thinking about results</think>\nHere are the functions"), std::string::npos);
  // Chat mode: the results close with </think>, and the reasoning is not shown.
  const std::string chat = encode(messages, false, kTools);
  EXPECT_TRUE(chat.ends_with("</function_results>\n\n</think>"));
  EXPECT_EQ(chat.find("Two cities."), std::string::npos);
  // Request tools go on the system message: the same prompt as tools on the message itself.
  json with_tools = messages;
  with_tools[0]["tools"] = kTools;
  EXPECT_EQ(encode(with_tools, true), out);
}

TEST(Dsv32ChatEncoding, ToolsWithoutASystemMessageGetAnEmptyOne) {
  const std::string out = encode(json::parse(R"([{"role":"user","content":"hi"}])"), false, kTools);
  EXPECT_TRUE(out.starts_with(kBos + "\n\n## Tools\n"));
  EXPECT_TRUE(out.ends_with(kFunctionsLine + "<｜User｜>hi<｜Assistant｜></think>"));
}

TEST(Dsv32ChatEncoding, DeveloperTurnIsAUserTurnWithItsToolsFirst) {
  const json messages = json::array({{{"role", "developer"}, {"content", "Find the weather."}, {"tools", kTools},
                                      {"response_format", {{"type", "object"}}}}});
  const std::string out = encode(messages, true);
  EXPECT_TRUE(out.starts_with(kBos + "<｜User｜>\n\n## Tools\n"));
  EXPECT_TRUE(out.ends_with(kFunctionsLine +
                            "\n\n## Response Format:\n\nYou MUST strictly adhere to the following schema to reply:\n"
                            "{\"type\": \"object\"}\n\n# The user's message is: Find the weather.<｜Assistant｜><think>"));
}

// With drop_thinking (the default), thinking mode drops developer turns before the last user
// turn; chat mode keeps everything.
TEST(Dsv32ChatEncoding, DropThinkingDropsEarlierDeveloperTurns) {
  const json messages = json::parse(R"([{"role":"developer","content":"Old instructions."},
    {"role":"assistant","content":"OK."},{"role":"user","content":"Go."}])");
  EXPECT_EQ(encode(messages, true), kBos + "OK." + kEos + "<｜User｜>Go.<｜Assistant｜><think>");
  EXPECT_EQ(encode(messages, true, nullptr, /*drop=*/false),
            kBos + "<｜User｜>\n\n# The user's message is: Old instructions.<｜Assistant｜></think>OK." + kEos +
                "<｜User｜>Go.<｜Assistant｜><think>");
}

TEST(Dsv32ChatEncoding, ClearErrors) {
  auto fails = [](const json& messages, bool thinking, const std::string& needle) {
    try {
      encode(messages, thinking);
      ADD_FAILURE() << "no error; expected one mentioning " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  fails(json::parse(R"([{"role":"tool","content":"x"}])"), false, "must follow an assistant message");
  fails(json::array({{{"role", "user"}, {"content", "q"}},
                     {{"role", "assistant"}, {"content", ""}, {"tool_calls", {weather_call("{}")}}},
                     {{"role", "tool"}, {"content", "a"}},
                     {{"role", "tool"}, {"content", "b"}}}),
        false, "more tool results");
  fails(json::parse(R"([{"role":"user","content":"q"},{"role":"assistant","content":"a"}])"), true,
        "needs reasoning_content or tool_calls");
  fails(json::array({{{"role", "user"}, {"content", "q"}},
                     {{"role", "assistant"}, {"content", ""}, {"tool_calls", {weather_call("not json")}}}}),
        false, "arguments are not JSON");
  fails(json::parse(R"([{"role":"latest_reminder","content":"x"}])"), false, "unknown role");
  fails(json::parse(R"([{"role":"developer","content":""}])"), false, "developer content must not be empty");
}

TEST(Dsv32ChatFormat, ParsesReasoningContentAndFunctionCalls) {
  const auto fmt = deepseek_v32_chat_format();
  EXPECT_EQ(fmt->name(), "deepseek_v32");
  EXPECT_EQ(fmt->tool_call_syntax(), "dsml_function_calls");
  const ParsedCompletion a = fmt->parse("Add them.</think>2" + kEos, true);
  EXPECT_EQ(a.reasoning_content, "Add them.");
  EXPECT_EQ(a.content, "2");
  const std::string call =
      "\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"get_weather\">\n"
      "<｜DSML｜parameter name=\"city\" string=\"true\">Paris</｜DSML｜parameter>\n"
      "<｜DSML｜parameter name=\"days\" string=\"false\">2</｜DSML｜parameter>\n</｜DSML｜invoke>\n"
      "</｜DSML｜function_calls>" + kEos;
  const ParsedCompletion b = fmt->parse("Checking." + call, false);
  EXPECT_EQ(b.content, "Checking.");
  ASSERT_EQ(b.tool_calls.size(), 1u);
  EXPECT_EQ(b.tool_calls[0].name, "get_weather");
  EXPECT_EQ(json::parse(b.tool_calls[0].arguments), json::parse(R"({"city": "Paris", "days": 2})"));
  // V4's block name is not V3.2's: its DSML marker inside content is refused.
  EXPECT_THROW(fmt->parse("\n\n<｜DSML｜tool_calls>\n</｜DSML｜tool_calls>" + kEos, false), Error);
  // The encoder's own rendering of a call parses back to the call.
  const json messages = json::array({{{"role", "user"}, {"content", "q"}},
                                     {{"role", "assistant"}, {"content", "Checking."},
                                      {"tool_calls", {weather_call(R"({"city": "Paris", "days": 2})")}}}});
  const std::string prompt = encode(messages, false);
  const std::string turn = prompt.substr(prompt.find("</think>") + 8);
  EXPECT_EQ(turn, "Checking." + call);
  // The output starts in reasoning when the prompt opens <think>.
  ChatRenderOptions o;
  o.thinking = true;
  const std::string p = fmt->render(json::parse(R"([{"role":"user","content":"q"}])"), nullptr, o);
  EXPECT_TRUE(fmt->output_starts_in_reasoning(p, o));
  o.add_generation_prompt = false;  // the official encoder cannot leave the turn closed
  EXPECT_THROW(fmt->render(json::parse(R"([{"role":"user","content":"q"}])"), nullptr, o), Error);
  o.add_generation_prompt = true;
  o.reasoning_effort = "max";
  EXPECT_THROW(fmt->render(json::parse(R"([{"role":"user","content":"q"}])"), nullptr, o), Error);
}

TEST(Dsv32ChatFormat, ChosenForTheModelType) {
  EXPECT_EQ(load_chat_format("/nonexistent", "deepseek_v32")->name(), "deepseek_v32");
}

}  // namespace
}  // namespace strata
