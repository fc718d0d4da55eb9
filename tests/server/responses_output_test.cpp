// The Responses API's output: items and usage of the response object, and its event stream
// (names, sequence numbers, indices; deltas that add up to the final items).
#include "server/responses_output.h"

#include <gtest/gtest.h>

#include <map>

#include "server/test_model.h"

namespace strata::server {
namespace {

const std::string D = "｜DSML｜";

std::string tool_block() {
  return "\n\n<" + D + "tool_calls>\n<" + D + "invoke name=\"get_weather\">\n<" + D +
         "parameter name=\"city\" string=\"true\">Oslo</" + D + "parameter>\n</" + D + "invoke>\n</" + D +
         "tool_calls>";
}

ResponseMeta chat_meta(bool thinking) {
  ResponseMeta m;
  m.id = "resp_test";
  m.model = "tiny";
  m.endpoint = Endpoint::chat;
  m.chat_format = test::chat_format();
  m.thinking = thinking;
  return m;
}

const ojson kSettings = {{"instructions", nullptr}, {"tool_choice", "auto"}, {"tools", ojson::array()}};

// The marker tokens' ids as the builder is told them (the test tokenizer has no single </think>).
int32_t think_start() { return 7; }
int32_t think_end() { return 8; }

struct Event {
  std::string type;
  ojson data;
};

// The SSE text as events; each "id:" line must be its data's sequence_number and each
// "event:" line name its data's type.
std::vector<Event> parse_sse(const std::string& s) {
  std::vector<Event> out;
  size_t pos = 0;
  while (pos < s.size()) {
    const size_t end = s.find("\n\n", pos);
    EXPECT_NE(end, std::string::npos);
    std::string block = s.substr(pos, end - pos);
    pos = end + 2;
    EXPECT_EQ(block.rfind("id: ", 0), 0u) << block;
    const std::string id = block.substr(4, block.find('\n') - 4);
    block.erase(0, block.find('\n') + 1);
    const size_t nl = block.find('\n');
    EXPECT_EQ(block.rfind("event: ", 0), 0u) << block;
    EXPECT_EQ(block.compare(nl + 1, 6, "data: "), 0) << block;
    Event e{block.substr(7, nl - 7), ojson::parse(block.substr(nl + 7))};
    EXPECT_EQ(e.data["type"], e.type);
    EXPECT_EQ(id, std::to_string(e.data["sequence_number"].get<int64_t>())) << block;
    out.push_back(std::move(e));
  }
  return out;
}

// Runs `pieces` (token id, text) through a ChoiceBuilder and a ResponseBuilder, the last
// piece finishing with `f`; returns the events of start() .. finish().
struct Streamed {
  ResponseBuilder b;
  std::vector<Event> events;
};
Streamed run(const std::vector<std::pair<int32_t, std::string>>& pieces, FinishReason f, bool thinking) {
  ChoiceBuilder ch(test::tokenizer(), chat_meta(thinking), 0);
  Streamed r{ResponseBuilder("resp_test", "tiny", 123, kSettings, thinking, think_start(), think_end()), {}};
  std::string sse = r.b.start();
  for (size_t i = 0; i < pieces.size(); ++i) {
    engine::Event e;
    e.token = pieces[i].first;
    e.text = pieces[i].second;
    if (i + 1 == pieces.size()) {
      e.finish = f;
      e.prompt_tokens = 10;
      e.cached_prompt_tokens = 4;
      e.generated_tokens = int64_t(pieces.size());
    }
    sse += r.b.add(e.token, ch.add(e));
  }
  sse += r.b.finish(ch.finish_reason(), ch.prompt_tokens(), ch.completion_tokens(), ch.cached_tokens());
  r.events = parse_sse(sse);
  return r;
}

std::vector<std::string> types(const std::vector<Event>& events) {
  std::vector<std::string> t;
  for (const auto& e : events) t.push_back(e.type);
  return t;
}

// What every stream must be: numbered 0.., created/in_progress first, the final response last
// and equal to the builder's, each item's deltas adding up to its done item.
void check_stream(const Streamed& r) {
  const auto& ev = r.events;
  ASSERT_GE(ev.size(), 3u);
  for (size_t i = 0; i < ev.size(); ++i) EXPECT_EQ(ev[i].data["sequence_number"], i);
  EXPECT_EQ(ev[0].type, "response.created");
  EXPECT_EQ(ev[0].data["response"]["status"], "in_progress");
  EXPECT_EQ(ev[0].data["response"]["output"], ojson::array());
  EXPECT_EQ(ev[1].type, "response.in_progress");
  const ojson final = r.b.response();
  EXPECT_EQ(ev.back().data["response"], final);
  std::map<std::string, std::string> text;  // item id -> deltas
  size_t done = 0;
  for (const auto& e : ev) {
    if (e.type == "response.output_text.delta" || e.type == "response.reasoning_text.delta" ||
        e.type == "response.function_call_arguments.delta")
      text[e.data["item_id"]] += e.data["delta"].get<std::string>();
    if (e.type == "response.output_item.done") {
      const ojson& item = e.data["item"];
      EXPECT_EQ(e.data["output_index"], done);
      EXPECT_EQ(final["output"][done], item);
      const std::string whole = item["type"] == "function_call" ? item["arguments"].get<std::string>()
                                                                : item["content"][0]["text"].get<std::string>();
      EXPECT_EQ(text[item["id"]], whole);
      ++done;
    }
  }
  EXPECT_EQ(done, final["output"].size());
}

TEST(ResponsesOutput, TextIsOneMessage) {
  Streamed r = run({{100, "Hel"}, {101, "lo "}, {102, "there"}}, FinishReason::stop, false);
  check_stream(r);
  EXPECT_EQ(types(r.events),
            (std::vector<std::string>{"response.created", "response.in_progress", "response.output_item.added",
                                      "response.content_part.added", "response.output_text.delta",
                                      "response.output_text.delta", "response.output_text.delta",
                                      "response.output_text.done", "response.content_part.done",
                                      "response.output_item.done", "response.completed"}));
  const ojson resp = r.b.response();
  EXPECT_EQ(resp["id"], "resp_test");
  EXPECT_EQ(resp["object"], "response");
  EXPECT_EQ(resp["created_at"], 123);
  EXPECT_EQ(resp["status"], "completed");
  EXPECT_EQ(resp["incomplete_details"], nullptr);
  EXPECT_EQ(resp["error"], nullptr);
  EXPECT_EQ(resp["model"], "tiny");
  EXPECT_EQ(resp["tool_choice"], "auto");  // the settings are echoed
  ASSERT_EQ(resp["output"].size(), 1u);
  const ojson& msg = resp["output"][0];
  EXPECT_EQ(msg["type"], "message");
  EXPECT_EQ(msg["id"].get<std::string>().rfind("msg_", 0), 0u);
  EXPECT_EQ(msg["role"], "assistant");
  EXPECT_EQ(msg["status"], "completed");
  EXPECT_EQ(msg["content"], ojson::parse(R"([{"type":"output_text","text":"Hello there","annotations":[]}])"));
  EXPECT_EQ(resp["usage"], ojson::parse(R"({"input_tokens":10,"input_tokens_details":{"cached_tokens":4},
      "output_tokens":3,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":13})"));
  const ojson& delta = r.events[4].data;
  EXPECT_EQ(delta["item_id"], msg["id"]);
  EXPECT_EQ(delta["output_index"], 0);
  EXPECT_EQ(delta["content_index"], 0);
  EXPECT_EQ(delta["delta"], "Hel");
}

TEST(ResponsesOutput, ReasoningItemThenMessage) {
  Streamed r = run({{100, "Think"}, {101, " hard."}, {think_end(), "</think>"}, {102, "The answer."}}, FinishReason::stop,
              true);
  check_stream(r);
  const ojson resp = r.b.response();
  ASSERT_EQ(resp["output"].size(), 2u);
  const ojson& rs = resp["output"][0];
  EXPECT_EQ(rs["type"], "reasoning");
  EXPECT_EQ(rs["id"].get<std::string>().rfind("rs_", 0), 0u);
  EXPECT_EQ(rs["summary"], ojson::array());
  EXPECT_EQ(rs["content"], ojson::parse(R"([{"type":"reasoning_text","text":"Think hard."}])"));
  EXPECT_EQ(rs["status"], "completed");
  EXPECT_EQ(resp["output"][1]["content"][0]["text"], "The answer.");
  EXPECT_EQ(resp["usage"]["output_tokens_details"]["reasoning_tokens"], 2);  // </think> itself excluded
  EXPECT_EQ(resp["usage"]["output_tokens"], 4);
  const auto t = types(r.events);
  EXPECT_EQ(std::vector<std::string>(t.begin() + 2, t.begin() + 9),
            (std::vector<std::string>{"response.output_item.added", "response.content_part.added",
                                      "response.reasoning_text.delta", "response.reasoning_text.delta",
                                      "response.reasoning_text.done", "response.content_part.done",
                                      "response.output_item.done"}));
  EXPECT_EQ(r.events[3].data["part"], ojson::parse(R"({"type":"reasoning_text","text":""})"));
  EXPECT_EQ(r.events[9].data["output_index"], 1);  // the message's output_item.added
}

TEST(ResponsesOutput, ToolCallsAreFunctionCallItems) {
  Streamed r = run({{100, "Let me check."}, {101, tool_block()}}, FinishReason::stop, false);
  check_stream(r);
  const ojson resp = r.b.response();
  EXPECT_EQ(resp["status"], "completed");
  ASSERT_EQ(resp["output"].size(), 2u);
  EXPECT_EQ(resp["output"][0]["content"][0]["text"], "Let me check.");
  const ojson& fc = resp["output"][1];
  EXPECT_EQ(fc["type"], "function_call");
  EXPECT_EQ(fc["id"].get<std::string>().rfind("fc_", 0), 0u);
  EXPECT_EQ(fc["call_id"].get<std::string>().rfind("call_", 0), 0u);
  EXPECT_EQ(fc["name"], "get_weather");
  EXPECT_EQ(ojson::parse(fc["arguments"].get<std::string>()), ojson::parse(R"({"city":"Oslo"})"));
  EXPECT_EQ(fc["status"], "completed");
  const auto t = types(r.events);
  EXPECT_EQ(std::vector<std::string>(t.end() - 5, t.end()),
            (std::vector<std::string>{"response.output_item.added", "response.function_call_arguments.delta",
                                      "response.function_call_arguments.done", "response.output_item.done",
                                      "response.completed"}));
  const ojson& added = r.events[r.events.size() - 5].data["item"];
  EXPECT_EQ(added["status"], "in_progress");
  EXPECT_EQ(added["arguments"], "");
  EXPECT_EQ(r.events[r.events.size() - 3].data["arguments"], fc["arguments"]);

  // calls alone: no empty message beside them
  Streamed only = run({{100, tool_block()}}, FinishReason::stop, false);
  check_stream(only);
  ASSERT_EQ(only.b.response()["output"].size(), 1u);
  EXPECT_EQ(only.b.response()["output"][0]["type"], "function_call");
}

TEST(ResponsesOutput, LengthLimitIsIncomplete) {
  Streamed r = run({{100, "cut "}, {101, "off"}}, FinishReason::length, false);
  check_stream(r);
  const ojson resp = r.b.response();
  EXPECT_EQ(resp["status"], "incomplete");
  EXPECT_EQ(resp["incomplete_details"], ojson::parse(R"({"reason":"max_output_tokens"})"));
  EXPECT_EQ(resp["output"][0]["status"], "incomplete");
  EXPECT_EQ(resp["output"][0]["content"][0]["text"], "cut off");
  EXPECT_EQ(r.events.back().type, "response.incomplete");
  // cut inside the reasoning: the reasoning item, then an empty message
  Streamed t = run({{100, "Still"}, {101, " thinking"}}, FinishReason::length, true);
  check_stream(t);
  ASSERT_EQ(t.b.response()["output"].size(), 2u);
  EXPECT_EQ(t.b.response()["output"][0]["type"], "reasoning");
  EXPECT_EQ(t.b.response()["output"][0]["status"], "incomplete");
  EXPECT_EQ(t.b.response()["output"][1]["content"][0]["text"], "");
  EXPECT_EQ(t.b.response()["usage"]["output_tokens_details"]["reasoning_tokens"], 2);
}

TEST(ResponsesOutput, EmptyReplyStillHasItsMessage) {
  Streamed r = run({{100, ""}}, FinishReason::stop, false);
  check_stream(r);
  const ojson resp = r.b.response();
  ASSERT_EQ(resp["output"].size(), 1u);
  EXPECT_EQ(resp["output"][0]["content"][0]["text"], "");
}

TEST(ResponsesOutput, ReasoningTokensBetweenMarkersTheModelWrites) {
  // Output that opens its own think block (a template that does not): only inside it counts.
  ResponseBuilder b("resp_x", "m", 1, kSettings, false, 7, 8);
  for (int32_t t : {1, 7, 2, 3, 8, 4}) b.add(t, ChoiceDelta{});
  EXPECT_EQ(b.reasoning_tokens(), 2);
}

TEST(ResponsesOutput, FailureIsAnErrorEventThenFailed) {
  ResponseBuilder b("resp_x", "m", 1, kSettings, false, std::nullopt, std::nullopt);
  b.start();
  ChoiceDelta d;
  d.content = "partial";
  b.add(5, d);
  const auto ev = parse_sse(b.fail("out of memory"));
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].type, "error");
  EXPECT_EQ(ev[0].data["message"], "out of memory");
  EXPECT_EQ(ev[0].data["sequence_number"], 5);  // after created, in_progress and the message's three
  EXPECT_EQ(ev[1].type, "response.failed");
  EXPECT_EQ(ev[1].data["response"]["status"], "failed");
  EXPECT_EQ(ev[1].data["response"]["error"]["message"], "out of memory");
}

// Ids are a function of the response id and the item's place: a response rendered again from
// the same events is the same bytes.
TEST(ResponsesOutput, ItemIdsDeriveFromTheResponseId) {
  Streamed r = run({{100, "Think"}, {think_end(), "</think>"}, {101, "Let me check."}, {102, tool_block()}},
                   FinishReason::stop, true);
  const ojson out = r.b.response()["output"];
  ASSERT_EQ(out.size(), 3u) << out;
  EXPECT_EQ(out[0]["id"], "rs_test_0");
  EXPECT_EQ(out[1]["id"], "msg_test_1");
  EXPECT_EQ(out[2]["id"], "fc_test_2");
  Streamed again = run({{100, "Think"}, {think_end(), "</think>"}, {101, "Let me check."}, {102, tool_block()}},
                       FinishReason::stop, true);
  EXPECT_EQ(dump_json(again.b.response()), dump_json(r.b.response()));
}

TEST(ResponsesOutput, CancelEndsWithStatusCancelled) {
  ResponseBuilder b("resp_x", "m", 1, kSettings, false, std::nullopt, std::nullopt);
  b.start();
  ChoiceDelta d;
  d.content = "partial";
  b.add(5, d);
  const auto ev = parse_sse(b.cancel(3, 1, 0));
  ASSERT_EQ(ev.size(), 4u);
  EXPECT_EQ(ev[2].type, "response.output_item.done");
  EXPECT_EQ(ev[2].data["item"]["status"], "incomplete");
  EXPECT_EQ(ev[3].type, "response.cancelled");
  EXPECT_EQ(ev[3].data["sequence_number"], 8);
  const ojson resp = b.response();
  EXPECT_EQ(resp["status"], "cancelled");
  EXPECT_EQ(resp["output"][0]["content"][0]["text"], "partial");
  EXPECT_EQ(resp["usage"]["output_tokens"], 1);
}

TEST(ResponsesOutput, SkippedEventsAreLeftOutButCounted) {
  ResponseBuilder b("resp_x", "m", 1, kSettings, false, std::nullopt, std::nullopt);
  b.skip_events(3);
  const auto start = parse_sse(b.start());
  EXPECT_TRUE(start.empty());
  ChoiceDelta d;
  d.content = "hi";
  const auto ev = parse_sse(b.add(5, d));  // the message's added (2), part added (3), delta (4)
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].data["sequence_number"], 3);
  EXPECT_EQ(ev[1].type, "response.output_text.delta");
}

}  // namespace
}  // namespace strata::server
