#include "grammar/tool_call_grammar.h"

#include <gtest/gtest.h>

#include <random>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "grammar/matcher.h"
#include "text/chat_format.h"
#include "text/tokenizer.h"

namespace strata::grammar {
namespace {

using json = nlohmann::ordered_json;

const json kTools = json::parse(R"([
  {"type":"function","function":{"name":"get_weather","parameters":{"type":"object",
     "properties":{"city":{"type":"string"},"days":{"type":"integer"},"unit":{"enum":["c","f"]}},
     "required":["city"]}}},
  {"type":"function","function":{"name":"now"}}])");

bool accepts(const Grammar& g, const std::string& text) {
  CompiledGrammar cg(g, std::make_shared<VocabIndex>(std::vector<std::optional<std::string>>{}));
  StackSet s = cg.initial();
  return cg.advance(s, text) && !s.empty() && s.front().empty();
}

TEST(ToolCallGrammar, DsmlInvokesWithRawStringsAndJsonValues) {
  const Grammar g = tool_call_grammar({{"syntax", "dsml"}, {"tools", kTools}, {"parallel", true}}, nullptr);
  const std::string open = "\n\n<｜DSML｜tool_calls>\n", close = "\n</｜DSML｜tool_calls>";
  const std::string weather =
      "<｜DSML｜invoke name=\"get_weather\">\n"
      "<｜DSML｜parameter name=\"city\" string=\"true\">São Paulo, \"SP\" <3</｜DSML｜parameter>\n"
      "<｜DSML｜parameter name=\"days\" string=\"false\">3</｜DSML｜parameter>\n"
      "<｜DSML｜parameter name=\"unit\" string=\"true\">c</｜DSML｜parameter>\n"
      "</｜DSML｜invoke>";
  const std::string now = "<｜DSML｜invoke name=\"now\">\n\n</｜DSML｜invoke>";
  EXPECT_TRUE(accepts(g, open + weather + close));
  EXPECT_TRUE(accepts(g, open + now + close));
  EXPECT_TRUE(accepts(g, open + weather + "\n" + now + close));
  EXPECT_FALSE(accepts(g, open + close));  // at least one call
  EXPECT_FALSE(accepts(g, "Sure! " + open + now + close));
  std::string no_city = weather;
  no_city.erase(no_city.find("<｜DSML｜parameter name=\"city\""), no_city.find("<｜DSML｜parameter name=\"days\"") -
                                                                        no_city.find("<｜DSML｜parameter name=\"city\""));
  EXPECT_FALSE(accepts(g, open + no_city + close));  // city is required
  std::string bad_unit = weather;
  bad_unit.replace(bad_unit.find(">c<"), 3, ">k<");
  EXPECT_FALSE(accepts(g, open + bad_unit + close));
  std::string bad_days = weather;
  bad_days.replace(bad_days.find(">3<"), 3, ">x<");
  EXPECT_FALSE(accepts(g, open + bad_days + close));
  const Grammar single = tool_call_grammar({{"syntax", "dsml"}, {"tools", kTools}, {"parallel", false}}, nullptr);
  EXPECT_FALSE(accepts(single, open + weather + "\n" + now + close));
}

TEST(ToolCallGrammar, HermesBlocksAndMarkersAsAddedTokens) {
  const json spec = {{"syntax", "hermes"}, {"tools", kTools}};
  const Grammar g = tool_call_grammar(spec, nullptr);
  const std::string call = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\", \"unit\": \"f\"}}\n</tool_call>";
  EXPECT_TRUE(accepts(g, call));
  EXPECT_TRUE(accepts(g, call + "\n<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(accepts(g, "<tool_call>\n{\"name\": \"other\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(accepts(g, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>"));

  // With the tags as added tokens, the grammar takes them as tokens only.
  std::vector<std::optional<std::string>> v;
  for (int b = 0; b < 256; ++b) v.push_back(std::string(1, char(b)));
  const int32_t open_id = int32_t(v.size()), close_id = open_id + 1;
  v.push_back(std::nullopt);
  v.push_back(std::nullopt);
  const Grammar gt = tool_call_grammar(spec, [&](std::string_view t) -> std::optional<int32_t> {
    if (t == "<tool_call>") return open_id;
    if (t == "</tool_call>") return close_id;
    return std::nullopt;
  });
  auto cg = std::make_shared<CompiledGrammar>(gt, std::make_shared<VocabIndex>(v));
  Matcher m(cg);
  std::vector<float> logits(v.size(), 0.0f);
  m.apply(logits, {});
  for (size_t i = 0; i < logits.size(); ++i) EXPECT_EQ(logits[i] == 0.0f, int32_t(i) == open_id) << i;
  EXPECT_THROW(Matcher(cg).accept(int32_t('<'), {}), Error);
  m.accept(open_id, {});
  for (char c : std::string("\n{\"name\": \"now\", \"arguments\": {}}\n")) m.accept(int32_t(uint8_t(c)), {});
  std::fill(logits.begin(), logits.end(), 0.0f);
  m.apply(logits, {});
  EXPECT_EQ(logits[size_t(close_id)], 0.0f);
  m.accept(close_id, {});
  EXPECT_TRUE(m.complete());
}

TEST(ToolCallGrammar, RefusesWhatItCannotEnforce) {
  auto err = [](const char* tools) {
    try {
      tool_call_grammar({{"syntax", "dsml"}, {"tools", json::parse(tools)}}, nullptr);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(err(R"([{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"s":{"type":"string","pattern":"x"}}}}}])")
                .find("'pattern'"),
            std::string::npos);
  EXPECT_NE(err(R"([{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"s":{"type":"string","maxLength":3}}}}}])")
                .find("raw text"),
            std::string::npos);
  EXPECT_NE(err(R"([])").find("no tools"), std::string::npos);
  EXPECT_THROW(tool_call_grammar({{"syntax", "xml"}, {"tools", kTools}}, nullptr), Error);
  // Malformed schemas are errors naming the keyword, not JSON library exceptions.
  EXPECT_NE(err(R"([{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":[1]}}}])")
                .find("'properties' must be an object"),
            std::string::npos);
  EXPECT_NE(err(R"([{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{},"required":[1]}}}])")
                .find("'required'"),
            std::string::npos);
  EXPECT_NE(err(R"([{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"s":{"type":"string","enum":["a",2]}}}}}])")
                .find("enum"),
            std::string::npos);
}

// Random walks through the masks over the real vocabularies end in calls the chat format's own
// parser reads back, with arguments of the schema's shape.
void walk_and_parse(const std::string& tokenizer, const std::string& syntax, const ChatFormat& format) {
  const Tokenizer tok = Tokenizer::load("../shared/tokenizers/" + tokenizer);
  const auto vocab = VocabIndex::from_tokenizer(tok);
  json tools = kTools;
  tools[0]["function"]["parameters"]["properties"]["city"] = {{"type", "string"}, {"enum", {"Oslo", "Lima"}}};
  const AddedTokenLookup added = [&](std::string_view t) -> std::optional<int32_t> {
    for (const auto& a : tok.added_tokens())
      if (a.content == t) return a.id;
    return std::nullopt;
  };
  auto cg = std::make_shared<CompiledGrammar>(
      tool_call_grammar({{"syntax", syntax}, {"tools", tools}, {"parallel", false}}, added), vocab);
  std::mt19937 rng(5);
  for (int run = 0; run < 6; ++run) {
    Matcher m(cg);
    std::vector<int32_t> ids;
    for (int step = 0; step < 300 && !m.complete(); ++step) {
      std::vector<float> logits(size_t(vocab->size()), 0.0f);
      m.apply(logits, {});
      std::vector<int32_t> ok;
      for (size_t i = 0; i < logits.size(); ++i)
        if (logits[i] == 0.0f) ok.push_back(int32_t(i));
      ASSERT_FALSE(ok.empty());
      ids.push_back(ok[rng() % ok.size()]);
      m.accept(ids.back(), {});
    }
    ASSERT_TRUE(m.complete());
    const std::string text = tok.decode(ids);
    auto parser = format.parser(false);
    parser->feed(text);
    parser->finish();
    const auto& calls = parser->result().tool_calls;
    ASSERT_EQ(calls.size(), 1u) << text;
    const json args = json::parse(calls[0].arguments);
    if (calls[0].name == "get_weather") {
      EXPECT_TRUE(args.at("city") == "Oslo" || args.at("city") == "Lima") << text;
      if (args.contains("days")) EXPECT_TRUE(args["days"].is_number_integer());
    } else {
      EXPECT_EQ(calls[0].name, "now");
      EXPECT_TRUE(args.empty()) << text;
    }
  }
}

TEST(ToolCallGrammar, DsmlWalksParseAsToolCalls) {
  walk_and_parse("deepseek-v3", "dsml", *deepseek_v4_chat_format());
}

// DeepSeek-V3.2's block is named function_calls; its own parser reads the grammar's output.
TEST(ToolCallGrammar, DsmlFunctionCallsWalksParseAsV32ToolCalls) {
  walk_and_parse("deepseek-v3", "dsml_function_calls", *deepseek_v32_chat_format());
}

TEST(ToolCallGrammar, HermesWalksParseAsToolCalls) {
  const auto fmt = jinja_chat_format("{{ messages }}", json::object(), "<|im_end|>");
  walk_and_parse("qwen3", "hermes", *fmt);
}

}  // namespace
}  // namespace strata::grammar
