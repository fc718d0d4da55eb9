// A model with a Jinja chat template (Qwen3's, from shared/tokenizers/qwen3): chat requests
// render through the template, and <think> / <tool_call> output becomes reasoning_content,
// content and OpenAI tool_calls.
#include <gtest/gtest.h>

#include "server/api_error.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/test_model.h"

namespace strata::server {
namespace {

using test::qwen3_model_info;
using test::qwen3_tokenizer;

const std::string kHello = R"("messages":[{"role":"user","content":"Hello"}])";
const std::string kTools =
    R"("tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}])";

ApiRequest chat(const std::string& fields) { return parse_chat_request("{" + fields + "}", qwen3_model_info()); }

std::vector<int32_t> tokens(const std::string& text) { return qwen3_tokenizer().encode(text); }

TEST(JinjaChatRequest, PromptIsTheTemplatesRendering) {
  ApiRequest r = chat(kHello);
  ASSERT_EQ(r.prompts.size(), 1u);
  // Thinking is off unless asked for: Qwen3's template closes an empty think block.
  EXPECT_EQ(r.prompts[0], tokens("<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"));
  EXPECT_FALSE(r.thinking);
  const auto thinking = tokens("<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(chat(kHello + R"(,"thinking":true)").prompts[0], thinking);
  EXPECT_EQ(chat(kHello + R"(,"chat_template_kwargs":{"enable_thinking":true})").prompts[0], thinking);
  EXPECT_EQ(chat(kHello + R"(,"reasoning_effort":"high")").prompts[0], thinking);
  // Qwen3 opens <think> itself: the output does not start inside the reasoning.
  EXPECT_FALSE(chat(kHello + R"(,"thinking":true)").thinking);
}

TEST(JinjaChatRequest, ToolsAndToolHistory) {
  const auto with = chat(kHello + "," + kTools).prompts[0];
  const auto none = chat(kHello + "," + kTools + R"(,"tool_choice":"none")").prompts[0];
  EXPECT_GT(with.size(), none.size());
  EXPECT_EQ(none, chat(kHello).prompts[0]);
  const std::string text = qwen3_tokenizer().decode(with);
  EXPECT_NE(text.find("<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\""), std::string::npos) << text;
  // A tool call and its result in the history.
  ApiRequest r = chat(R"("messages":[{"role":"user","content":"Weather in Oslo?"},
    {"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},
    {"role":"tool","tool_call_id":"c1","content":"5 C"}],)" + kTools);
  const std::string h = qwen3_tokenizer().decode(r.prompts[0]);
  EXPECT_NE(h.find("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Oslo\"}}\n</tool_call>"), std::string::npos) << h;
  EXPECT_NE(h.find("<tool_response>\n5 C\n</tool_response>"), std::string::npos) << h;
}

TEST(JinjaChatRequest, TemplateFailuresAreBadRequests) {
  // Qwen3's template reads assistant content as a string: null content fails in the template.
  try {
    chat(R"("messages":[{"role":"user","content":"a"},{"role":"assistant","content":null},{"role":"user","content":"b"}])");
    FAIL() << "accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400);
    EXPECT_EQ(e.param, "messages");
    EXPECT_NE(std::string(e.what()).find("jinja: cannot apply 'in' to none (line "), std::string::npos) << e.what();
  }
  // A model without a chat template serves no chat completions.
  ModelInfo m = qwen3_model_info();
  m.chat_format = nullptr;
  try {
    parse_chat_request("{" + kHello + "}", m);
    FAIL() << "accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400);
    EXPECT_NE(std::string(e.what()).find("no chat template"), std::string::npos);
  }
}

ResponseMeta qwen_meta(bool thinking) {
  ResponseMeta m;
  m.id = "chatcmpl-test";
  m.model = "qwen";
  m.endpoint = Endpoint::chat;
  m.chat_format = test::qwen3_chat_format();
  m.thinking = thinking;
  return m;
}

std::vector<ChoiceDelta> feed(ChoiceBuilder& b, const std::string& text, size_t step) {
  std::vector<ChoiceDelta> out;
  for (size_t i = 0; i < text.size(); i += step) {
    engine::Event e;
    e.token = 100;
    e.text = text.substr(i, step);
    if (i + step >= text.size()) {
      e.finish = FinishReason::stop;
      e.prompt_tokens = 5;
    }
    out.push_back(b.add(e));
  }
  return out;
}

TEST(JinjaChatResponse, ThinkTagsBecomeReasoningContent) {
  for (size_t step : {size_t(1), size_t(4), size_t(1000)}) {
    ChoiceBuilder b(qwen3_tokenizer(), qwen_meta(false), 0);
    std::string reasoning, content;
    for (const ChoiceDelta& d : feed(b, "<think>\nThe user greets me.\n</think>\n\nHello!", step)) {
      reasoning += d.reasoning;
      content += d.content;
      EXPECT_EQ(d.content.find('<'), std::string::npos) << "a tag leaked at step " << step;
    }
    EXPECT_EQ(reasoning, "The user greets me.");
    EXPECT_EQ(content, "Hello!");
    const ojson c = b.choice_json();
    EXPECT_EQ(c["message"]["reasoning_content"], "The user greets me.");
    EXPECT_EQ(c["message"]["content"], "Hello!");
    EXPECT_EQ(c["finish_reason"], "stop");
  }
  // Without reasoning in the output and without thinking asked for, there is no reasoning_content.
  ChoiceBuilder plain(qwen3_tokenizer(), qwen_meta(false), 0);
  feed(plain, "Just text.", 3);
  EXPECT_FALSE(plain.choice_json()["message"].contains("reasoning_content"));
}

TEST(JinjaChatResponse, ToolCallTagsBecomeToolCalls) {
  const std::string text =
      "Checking.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>";
  for (size_t step : {size_t(1), size_t(6), size_t(1000)}) {
    ChoiceBuilder b(qwen3_tokenizer(), qwen_meta(false), 0);
    std::string content;
    std::vector<ojson> calls;
    const auto deltas = feed(b, text, step);
    for (size_t i = 0; i < deltas.size(); ++i) {
      content += deltas[i].content;
      const ojson chunk = chunk_json(qwen_meta(false), 0, deltas[i], i == 0, false);
      for (const auto& c : chunk["choices"][0]["delta"].value("tool_calls", ojson::array())) calls.push_back(c);
    }
    EXPECT_EQ(content, "Checking.") << step;
    ASSERT_EQ(calls.size(), 1u) << step;
    EXPECT_EQ(calls[0]["index"], 0);
    EXPECT_EQ(calls[0]["function"]["name"], "get_weather");
    EXPECT_EQ(calls[0]["function"]["arguments"], "{\"city\": \"Oslo\"}");
    EXPECT_STREQ(deltas.back().finish_reason, "tool_calls");
    const ojson c = b.choice_json();
    EXPECT_EQ(c["finish_reason"], "tool_calls");
    EXPECT_EQ(c["message"]["tool_calls"][0]["id"], calls[0]["id"]);
  }
  // A block that is not JSON stays content, and the turn ends as a plain stop.
  ChoiceBuilder bad(qwen3_tokenizer(), qwen_meta(false), 0);
  feed(bad, "<tool_call>\nnot json\n</tool_call>", 5);
  EXPECT_EQ(bad.choice_json()["message"]["content"], "<tool_call>\nnot json\n</tool_call>");
  EXPECT_EQ(bad.choice_json()["finish_reason"], "stop");
}

}  // namespace
}  // namespace strata::server
