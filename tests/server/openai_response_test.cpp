#include "server/openai_response.h"

#include <gtest/gtest.h>

#include "server/test_model.h"

namespace strata::server {
namespace {

const std::string EOS = "<｜end▁of▁sentence｜>";
const std::string D = "｜DSML｜";

std::string tool_block() {
  return "\n\n<" + D + "tool_calls>\n<" + D + "invoke name=\"get_weather\">\n<" + D +
         "parameter name=\"city\" string=\"true\">Oslo</" + D + "parameter>\n<" + D +
         "parameter name=\"days\" string=\"false\">3</" + D + "parameter>\n</" + D + "invoke>\n</" + D + "tool_calls>";
}

ResponseMeta chat_meta(bool thinking = false, int top_logprobs = -1) {
  ResponseMeta m;
  m.id = "chatcmpl-test";
  m.model = "tiny";
  m.created = 123;
  m.endpoint = Endpoint::chat;
  m.chat_format = test::chat_format();
  m.thinking = thinking;
  m.top_logprobs = top_logprobs;
  return m;
}

engine::Event token(int32_t id, std::string text) {
  engine::Event e;
  e.token = id;
  e.text = std::move(text);
  return e;
}
engine::Event last(int32_t id, std::string text, FinishReason f) {
  engine::Event e = token(id, std::move(text));
  e.finish = f;
  e.prompt_tokens = 10;
  e.generated_tokens = 0;
  e.cached_prompt_tokens = 4;
  return e;
}

// Feeds `text` split into pieces of `step` bytes, as streamed events; the last one finishes.
std::vector<ChoiceDelta> feed(ChoiceBuilder& b, const std::string& text, size_t step, FinishReason f) {
  std::vector<ChoiceDelta> out;
  for (size_t i = 0; i < text.size(); i += step) {
    const bool end = i + step >= text.size();
    std::string piece = text.substr(i, step);
    out.push_back(b.add(end ? last(100, piece, f) : token(100, piece)));
  }
  return out;
}

TEST(OpenAIResponse, ToolCallsFromDsmlStreamAndWhole) {
  for (size_t step : {size_t(1), size_t(7), size_t(1000)}) {
    ChoiceBuilder b(test::tokenizer(), chat_meta(), 0);
    // EOS is not in the streamed text: the builder closes the turn itself
    auto deltas = feed(b, "Let me check." + tool_block(), step, FinishReason::stop);
    std::string content;
    std::vector<ojson> calls;
    for (size_t i = 0; i < deltas.size(); ++i) {
      content += deltas[i].content;
      ojson chunk = chunk_json(chat_meta(), 0, deltas[i], i == 0, false);
      EXPECT_EQ(chunk["object"], "chat.completion.chunk");
      for (auto& c : chunk["choices"][0]["delta"].value("tool_calls", ojson::array())) calls.push_back(c);
    }
    EXPECT_EQ(content, "Let me check.") << step;
    ASSERT_EQ(calls.size(), 1u) << step;
    EXPECT_EQ(calls[0]["index"], 0);
    EXPECT_EQ(calls[0]["type"], "function");
    EXPECT_EQ(calls[0]["function"]["name"], "get_weather");
    EXPECT_EQ(ojson::parse(calls[0]["function"]["arguments"].get<std::string>()), ojson::parse(R"({"city":"Oslo","days":3})"));
    EXPECT_EQ(calls[0]["id"].get<std::string>().rfind("call_", 0), 0u);
    EXPECT_STREQ(deltas.back().finish_reason, "tool_calls");
    ojson c = b.choice_json();
    EXPECT_EQ(c["finish_reason"], "tool_calls");
    EXPECT_EQ(c["message"]["content"], "Let me check.");
    EXPECT_EQ(c["message"]["tool_calls"][0]["function"]["name"], "get_weather");
    EXPECT_EQ(c["message"]["tool_calls"][0]["id"], calls[0]["id"]);
    EXPECT_FALSE(c["message"].contains("reasoning_content"));
    // The call's id follows from the response id and the choice: the answer rendered again
    // (a resumed stream) names it the same; another response or choice does not.
    auto id_of = [&](const ResponseMeta& m, size_t index) {
      ChoiceBuilder again(test::tokenizer(), m, index);
      feed(again, "Let me check." + tool_block(), step, FinishReason::stop);
      return again.choice_json()["message"]["tool_calls"][0]["id"];
    };
    EXPECT_EQ(id_of(chat_meta(), 0), calls[0]["id"]);
    EXPECT_NE(id_of(chat_meta(), 1), calls[0]["id"]);
    ResponseMeta other = chat_meta();
    other.id = "chatcmpl-other";
    EXPECT_NE(id_of(other, 0), calls[0]["id"]);
    EXPECT_EQ(calls[0]["id"].get<std::string>().size(), 5u + 24u);
  }
}

TEST(OpenAIResponse, ReasoningThenContent) {
  ChoiceBuilder b(test::tokenizer(), chat_meta(true), 1);
  auto deltas = feed(b, "Think hard.</think>The answer.", 3, FinishReason::stop);
  std::string reasoning, content;
  for (const auto& d : deltas) reasoning += d.reasoning, content += d.content;
  EXPECT_EQ(reasoning, "Think hard.");
  EXPECT_EQ(content, "The answer.");
  ojson chunk = chunk_json(chat_meta(true), 1, deltas[0], true, false);
  EXPECT_EQ(chunk["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(chunk["choices"][0]["delta"]["reasoning_content"], "Thi");
  ojson c = b.choice_json();
  EXPECT_EQ(c["index"], 1);
  EXPECT_EQ(c["message"]["reasoning_content"], "Think hard.");
  EXPECT_EQ(c["message"]["content"], "The answer.");
  EXPECT_EQ(c["finish_reason"], "stop");
}

TEST(OpenAIResponse, LengthAndUnparsableOutputPassThrough) {
  ChoiceBuilder b(test::tokenizer(), chat_meta(), 0);
  feed(b, "plain text cut", 4, FinishReason::length);
  EXPECT_EQ(b.choice_json()["message"]["content"], "plain text cut");
  EXPECT_EQ(b.choice_json()["finish_reason"], "length");
  // malformed DSML from a random model: never throws, the text still arrives
  ChoiceBuilder m(test::tokenizer(), chat_meta(), 0);
  EXPECT_NO_THROW(feed(m, "x\n\n<" + D + "tool_calls>\n<" + D + "bogus>" + "tail", 5, FinishReason::stop));
  EXPECT_TRUE(m.finished());
  EXPECT_EQ(m.choice_json()["finish_reason"], "stop");
}

TEST(OpenAIResponse, CancelledAndErroredHaveNoFinishReason) {
  ChoiceBuilder b(test::tokenizer(), chat_meta(), 0);
  b.add(token(5, "a"));
  engine::Event c;
  c.kind = engine::EventKind::finished;
  c.cancelled = true;
  ChoiceDelta d = b.add(c);
  EXPECT_TRUE(b.finished());
  EXPECT_TRUE(b.cancelled());
  EXPECT_FALSE(b.error().empty());
  EXPECT_EQ(d.finish_reason, nullptr);
  ChoiceBuilder e(test::tokenizer(), chat_meta(), 0);
  engine::Event err;
  err.kind = engine::EventKind::finished;
  err.error = "out of memory";
  e.add(err);
  EXPECT_EQ(e.error(), "out of memory");
}

TEST(OpenAIResponse, ChatLogprobs) {
  ChoiceBuilder b(test::tokenizer(), chat_meta(false, 2), 0);
  engine::Event e = last(100, "x", FinishReason::length);
  e.logprobs = SampledLogprobs{-0.5f, 1, {{100, -0.5f}, {101, -std::numeric_limits<float>::infinity()}}};
  ChoiceDelta d = b.add(e);
  ASSERT_FALSE(d.logprobs.is_null());
  const ojson& entry = d.logprobs["content"][0];
  EXPECT_EQ(entry["token"], test::tokenizer().token_bytes(100));
  EXPECT_DOUBLE_EQ(entry["logprob"].get<double>(), -0.5);
  EXPECT_TRUE(entry["bytes"].is_array());
  EXPECT_EQ(entry["top_logprobs"].size(), 2u);
  EXPECT_DOUBLE_EQ(entry["top_logprobs"][1]["logprob"].get<double>(), -9999.0);  // -inf is not JSON
  EXPECT_EQ(b.choice_json()["logprobs"]["content"].size(), 1u);
}

TEST(OpenAIResponse, CompletionChoiceAndChunks) {
  ResponseMeta m = chat_meta(false, 1);
  m.endpoint = Endpoint::completions;
  m.id = "cmpl-test";
  ChoiceBuilder b(test::tokenizer(), m, 0);
  engine::Event a = token(100, "Hello");
  a.logprobs = SampledLogprobs{-1.0f, 2, {{7, -0.25f}}};
  ChoiceDelta d1 = b.add(a);
  engine::Event z = last(101, " world", FinishReason::length);
  z.logprobs = SampledLogprobs{-2.0f, 3, {{8, -0.5f}}};
  ChoiceDelta d2 = b.add(z);
  ojson chunk = chunk_json(m, 0, d1, true, true);
  EXPECT_EQ(chunk["object"], "text_completion");
  EXPECT_EQ(chunk["choices"][0]["text"], "Hello");
  EXPECT_TRUE(chunk["choices"][0]["finish_reason"].is_null());
  EXPECT_TRUE(chunk.contains("usage"));
  EXPECT_TRUE(chunk["usage"].is_null());
  EXPECT_EQ(chunk_json(m, 0, d2, false, false)["choices"][0]["finish_reason"], "length");
  ojson c = b.choice_json();
  EXPECT_EQ(c["text"], "Hello world");
  EXPECT_EQ(c["logprobs"]["tokens"].size(), 2u);
  EXPECT_EQ(c["logprobs"]["text_offset"][1], 5);
  EXPECT_DOUBLE_EQ(c["logprobs"]["token_logprobs"][1].get<double>(), -2.0);
  EXPECT_EQ(c["logprobs"]["top_logprobs"][0].size(), 1u);
  EXPECT_EQ(b.prompt_tokens(), 10);
  EXPECT_EQ(b.completion_tokens(), 2);
  EXPECT_EQ(b.cached_tokens(), 4);
}

TEST(OpenAIResponse, CompletionEchoStartsTheText) {
  ResponseMeta m = chat_meta();
  m.endpoint = Endpoint::completions;
  ChoiceBuilder b(test::tokenizer(), m, 0, "Once upon");
  ChoiceDelta d1 = b.add(token(100, " a"));
  ChoiceDelta d2 = b.add(last(101, " time", FinishReason::length));
  EXPECT_EQ(d1.content, "Once upon a");  // the first chunk carries the prompt
  EXPECT_EQ(d2.content, " time");
  EXPECT_EQ(b.choice_json()["text"], "Once upon a time");
  // A choice that ends at once still echoes its prompt.
  ChoiceBuilder e(test::tokenizer(), m, 1, "Hi");
  EXPECT_EQ(e.add(last(1, "", FinishReason::stop)).content, "Hi");
  EXPECT_EQ(e.choice_json()["text"], "Hi");
}

TEST(OpenAIResponse, ResponseUsageAndSse) {
  ResponseMeta m = chat_meta();
  ojson u = usage_json(10, 5, 4);
  EXPECT_EQ(u["total_tokens"], 15);
  EXPECT_EQ(u["prompt_tokens_details"]["cached_tokens"], 4);
  ojson r = response_json(m, {ojson{{"index", 0}}}, u);
  EXPECT_EQ(r["object"], "chat.completion");
  EXPECT_EQ(r["id"], "chatcmpl-test");
  EXPECT_EQ(r["created"], 123);
  EXPECT_EQ(r["usage"]["completion_tokens"], 5);
  ojson uc = usage_chunk_json(m, u);
  EXPECT_TRUE(uc["choices"].empty());
  EXPECT_EQ(uc["usage"]["prompt_tokens"], 10);
  std::string ev = sse_event(ojson{{"a", std::string("\xE4\xB8")}});  // half a character
  EXPECT_EQ(ev.rfind("data: {", 0), 0u);
  EXPECT_EQ(ev.substr(ev.size() - 2), "\n\n");
  EXPECT_NE(ev.find("\xEF\xBF\xBD"), std::string::npos);  // replaced by U+FFFD
  EXPECT_EQ(sse_done(), "data: [DONE]\n\n");
  EXPECT_NE(new_id("x-"), new_id("x-"));
}

}  // namespace
}  // namespace strata::server
