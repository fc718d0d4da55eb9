// POST /v1/responses parsing: the prompt is the chat request's for the same conversation, and
// every field, good or bad, is read (a 400 names it).
#include "server/responses_request.h"

#include <gtest/gtest.h>

#include "server/api_error.h"
#include "server/test_model.h"

namespace strata::server {
namespace {

using ojson = nlohmann::ordered_json;
using test::model_info;

ApiError responses_error(const std::string& body, int64_t ctx = 4096) {
  try {
    parse_responses_request(body, model_info(ctx));
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted: " << body;
  return ApiError(0, "");
}

// A body with `input` "Hello" and `extra` fields, which must be a 400 naming `param`.
void expect_400(const std::string& extra, const std::string& param, const std::string& why = "") {
  const ApiError e = responses_error(R"({"input":"Hello")" + extra + "}");
  EXPECT_EQ(e.status, 400) << extra;
  EXPECT_EQ(e.param, param) << extra << ": " << e.what();
  if (!why.empty()) EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
}

// The Responses body and the chat body give the same prompt, thinking and structured output.
void expect_same_as_chat(const std::string& responses, const std::string& chat) {
  const ResponsesRequest r = parse_responses_request(responses, model_info());
  const ApiRequest c = parse_chat_request(chat, model_info());
  EXPECT_EQ(r.api.prompts, c.prompts) << responses;
  EXPECT_EQ(r.api.thinking, c.thinking) << responses;
  EXPECT_EQ(r.api.sampling.structured, c.sampling.structured) << responses;
}

TEST(ResponsesRequest, StringInputIsOneUserMessage) {
  const ResponsesRequest r = parse_responses_request(
      R"({"model":"tiny","input":"Hello","temperature":0,"top_p":0.5,"seed":3,"max_output_tokens":7,"stream":true})",
      model_info());
  expect_same_as_chat(R"({"input":"Hello"})", R"({"messages":[{"role":"user","content":"Hello"}]})");
  EXPECT_EQ(r.api.model, "tiny");
  EXPECT_EQ(r.api.endpoint, Endpoint::chat);
  EXPECT_EQ(r.api.n, 1);
  EXPECT_TRUE(r.api.stream);
  EXPECT_FALSE(r.api.thinking);
  EXPECT_EQ(r.api.sampling.temperature, 0.0);
  EXPECT_EQ(r.api.sampling.top_p, 0.5);
  EXPECT_EQ(*r.api.sampling.seed, 3u);
  EXPECT_EQ(*r.api.sampling.max_tokens, 7);
  EXPECT_FALSE(r.api.sampling.structured);
}

TEST(ResponsesRequest, SettingsAreEchoedWithDefaults) {
  const ResponsesRequest d = parse_responses_request(R"({"input":"Hello"})", model_info(1000));
  EXPECT_EQ(d.settings["instructions"], nullptr);
  EXPECT_EQ(d.settings["max_output_tokens"], nullptr);
  EXPECT_EQ(*d.api.sampling.max_tokens, 1000 - int64_t(d.api.prompts[0].size()));  // the rest of the context
  EXPECT_EQ(d.settings["metadata"], ojson::object());
  EXPECT_EQ(d.settings["parallel_tool_calls"], true);
  EXPECT_EQ(d.settings["reasoning"], ojson::parse(R"({"effort":null,"summary":null})"));
  EXPECT_EQ(d.settings["store"], false);
  EXPECT_EQ(d.settings["temperature"], 1.0);
  EXPECT_EQ(d.settings["text"], ojson::parse(R"({"format":{"type":"text"}})"));
  EXPECT_EQ(d.settings["tool_choice"], "auto");
  EXPECT_EQ(d.settings["tools"], ojson::array());
  EXPECT_EQ(d.settings["top_p"], 1.0);
  EXPECT_EQ(d.settings["user"], nullptr);
  const ResponsesRequest s = parse_responses_request(
      R"({"input":"Hello","instructions":"Be brief.","max_output_tokens":9,"metadata":{"k":"v"},"user":"u1",
          "store":true,"reasoning":{"effort":"high"},"tool_choice":"none","temperature":0.5,
          "tools":[{"type":"function","name":"f","parameters":{"type":"object"}}]})",
      model_info());
  EXPECT_EQ(s.settings["instructions"], "Be brief.");
  EXPECT_EQ(s.settings["max_output_tokens"], 9);
  EXPECT_EQ(s.settings["metadata"]["k"], "v");
  EXPECT_EQ(s.settings["user"], "u1");
  EXPECT_EQ(s.settings["store"], false);  // strata keeps nothing
  EXPECT_EQ(s.settings["reasoning"]["effort"], "high");
  EXPECT_EQ(s.settings["tool_choice"], "none");
  EXPECT_EQ(s.settings["temperature"], 0.5);
  EXPECT_EQ(s.settings["tools"][0]["name"], "f");  // Responses' own shape
}

TEST(ResponsesRequest, InstructionsAndItemsAreTheChatMessages) {
  expect_same_as_chat(R"({"instructions":"Be brief.","input":"Hello"})",
                      R"({"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hello"}]})");
  expect_same_as_chat(
      R"({"input":[{"role":"developer","content":"Rules."},
                   {"type":"message","role":"user","content":[{"type":"input_text","text":"Hel"},{"type":"input_text","text":"lo"}]},
                   {"type":"message","id":"msg_1","status":"completed","role":"assistant",
                    "content":[{"type":"output_text","text":"Hi!","annotations":[]}]},
                   {"role":"user","content":"Again"}]})",
      R"({"messages":[{"role":"developer","content":"Rules."},{"role":"user","content":"Hello"},
                      {"role":"assistant","content":"Hi!"},{"role":"user","content":"Again"}]})");
}

TEST(ResponsesRequest, FunctionCallsAndOutputsAreToolTurns) {
  const std::string tools_r = R"("tools":[{"type":"function","name":"get_weather","description":"Weather",
      "parameters":{"type":"object","properties":{"city":{"type":"string"}}},"strict":true}])";
  const std::string tools_c = R"("tools":[{"type":"function","function":{"name":"get_weather","description":"Weather",
      "parameters":{"type":"object","properties":{"city":{"type":"string"}}},"strict":true}}])";
  expect_same_as_chat("{\"input\":\"Weather in Oslo?\"," + tools_r + "}",
                      R"({"messages":[{"role":"user","content":"Weather in Oslo?"}],)" + tools_c + "}");
  // the function object keeps the client's key order, which the prompt shows
  expect_same_as_chat(R"({"input":"Hi","tools":[{"strict":false,"type":"function","parameters":{"type":"object"},"name":"f"}]})",
                      R"({"messages":[{"role":"user","content":"Hi"}],
                          "tools":[{"type":"function","function":{"strict":false,"parameters":{"type":"object"},"name":"f"}}]})");
  // An output's reasoning, text and calls passed back: one assistant turn, then the results.
  expect_same_as_chat(
      R"({"reasoning":{"effort":"medium"},"input":[{"role":"user","content":"Weather in Oslo and Bergen?"},
          {"type":"reasoning","id":"rs_1","summary":[],"content":[{"type":"reasoning_text","text":"Two calls."}]},
          {"type":"message","role":"assistant","content":[{"type":"output_text","text":"Checking."}]},
          {"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Oslo\"}","status":"completed"},
          {"type":"function_call","call_id":"call_2","name":"get_weather","arguments":"{\"city\":\"Bergen\"}"},
          {"type":"function_call_output","call_id":"call_1","output":"5 C"},
          {"type":"function_call_output","call_id":"call_2","output":[{"type":"input_text","text":"7 C"}]}],)" +
          tools_r + "}",
      R"({"reasoning_effort":"medium","messages":[{"role":"user","content":"Weather in Oslo and Bergen?"},
          {"role":"assistant","content":"Checking.","reasoning_content":"Two calls.","tool_calls":[
            {"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}},
            {"id":"call_2","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Bergen\"}"}}]},
          {"role":"tool","tool_call_id":"call_1","content":"5 C"},
          {"role":"tool","tool_call_id":"call_2","content":"7 C"}],)" +
          tools_c + "}");
  // a call with no assistant text before it starts its own turn
  expect_same_as_chat(
      R"({"input":[{"role":"user","content":"Weather?"},
          {"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{}"},
          {"type":"function_call_output","call_id":"call_1","output":"5 C"}],)" + tools_r + "}",
      R"({"messages":[{"role":"user","content":"Weather?"},
          {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},
          {"role":"tool","tool_call_id":"call_1","content":"5 C"}],)" + tools_c + "}");
  // a forced call decodes under chat's tool-call grammar
  expect_same_as_chat("{\"input\":\"Hi\",\"tool_choice\":\"required\"," + tools_r + "}",
                      R"({"messages":[{"role":"user","content":"Hi"}],"tool_choice":"required",)" + tools_c + "}");
  expect_same_as_chat("{\"input\":\"Hi\",\"tool_choice\":{\"type\":\"function\",\"name\":\"get_weather\"}," + tools_r + "}",
                      R"({"messages":[{"role":"user","content":"Hi"}],"tool_choice":{"type":"function","function":{"name":"get_weather"}},)" +
                          tools_c + "}");
  EXPECT_TRUE(parse_responses_request("{\"input\":\"Hi\",\"tool_choice\":\"required\"," + tools_r + "}", model_info())
                  .api.sampling.structured);
  // tool_choice none leaves the tools out, as in chat
  expect_same_as_chat("{\"input\":\"Hi\",\"tool_choice\":\"none\"," + tools_r + "}",
                      R"({"messages":[{"role":"user","content":"Hi"}]})");
  expect_same_as_chat("{\"input\":\"Hi\",\"tool_choice\":\"auto\",\"parallel_tool_calls\":true," + tools_r + "}",
                      R"({"messages":[{"role":"user","content":"Hi"}],"tool_choice":"auto",)" + tools_c + "}");
}

TEST(ResponsesRequest, ReasoningEffortTurnsThinkingOn) {
  expect_same_as_chat(R"({"input":"Hello","reasoning":{"effort":"high"}})",
                      R"({"messages":[{"role":"user","content":"Hello"}],"reasoning_effort":"high"})");
  expect_same_as_chat(R"({"input":"Hello","reasoning":{"effort":"max"}})",
                      R"({"messages":[{"role":"user","content":"Hello"}],"reasoning_effort":"max"})");
  EXPECT_TRUE(parse_responses_request(R"({"input":"Hello","reasoning":{"effort":"low"}})", model_info()).api.thinking);
  for (const char* off : {R"({"input":"Hello","reasoning":{"effort":"none"}})", R"({"input":"Hello","reasoning":{}})",
                          R"({"input":"Hello","reasoning":null})"})
    expect_same_as_chat(off, R"({"messages":[{"role":"user","content":"Hello"}]})");
}

TEST(ResponsesRequest, TextFormatIsChatsResponseFormat) {
  const std::string schema = R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]})";
  expect_same_as_chat(R"({"input":"Hello","text":{"format":{"type":"json_schema","name":"x","strict":true,"schema":)" +
                          schema + "}}}",
                      R"({"messages":[{"role":"user","content":"Hello"}],"response_format":{"type":"json_schema",
                          "json_schema":{"name":"x","strict":true,"schema":)" + schema + "}}}");
  expect_same_as_chat(R"({"input":"Hello","text":{"format":{"type":"json_object"}}})",
                      R"({"messages":[{"role":"user","content":"Hello"}],"response_format":{"type":"json_object"}})");
  expect_same_as_chat(R"({"input":"Hello","text":{"format":{"type":"text"}}})",
                      R"({"messages":[{"role":"user","content":"Hello"}]})");
  // with thinking on, as chat: the same prompt and grammar on Qwen3 (whose model opens its own
  // <think>), and on DeepSeek-V4 a grammar after </think>, which this tokenizer lacks as one token
  const ResponsesRequest q = parse_responses_request(
      R"({"input":"Hello","reasoning":{"effort":"high"},"text":{"format":{"type":"json_object"}}})", test::qwen3_model_info());
  const ApiRequest qc = parse_chat_request(R"({"messages":[{"role":"user","content":"Hello"}],"reasoning_effort":"high",
                                               "response_format":{"type":"json_object"}})",
                                           test::qwen3_model_info());
  EXPECT_EQ(q.api.prompts, qc.prompts);
  EXPECT_EQ(q.api.thinking, qc.thinking);
  EXPECT_EQ(q.api.sampling.structured, qc.sampling.structured);
  expect_400(R"(,"reasoning":{"effort":"high"},"text":{"format":{"type":"json_object"}})", "text", "</think>");
  const ResponsesRequest r = parse_responses_request(R"({"input":"x","text":{"format":{"type":"json_object"}}})", model_info());
  EXPECT_EQ(r.settings["text"]["format"]["type"], "json_object");
}

TEST(ResponsesRequest, AcceptedWithoutEffect) {
  EXPECT_NO_THROW(parse_responses_request(
      R"({"input":"Hello","store":false,"background":false,"include":[],"truncation":"disabled","user":"u",
          "service_tier":"auto","prompt_cache_key":"k","safety_identifier":"s","metadata":{},"previous_response_id":null,
          "text":{},"tools":[]})",
      model_info()));
}

TEST(ResponsesRequest, UnsupportedFieldsAreNamed) {
  expect_400(R"(,"previous_response_id":"resp_1")", "previous_response_id", "keeps no responses");
  expect_400(R"(,"conversation":"conv_1")", "conversation", "keeps no responses");
  expect_400(R"(,"prompt":{"id":"pmpt_1"})", "prompt", "stored prompt");
  expect_400(R"(,"background":true)", "background", "keeps no responses");
  expect_400(R"(,"include":["reasoning.encrypted_content"])", "include", "reasoning.encrypted_content");
  expect_400(R"(,"truncation":"auto")", "truncation", "disabled");
  expect_400(R"(,"max_tool_calls":3)", "max_tool_calls");
  expect_400(R"(,"top_logprobs":2)", "top_logprobs");
  expect_400(R"(,"stream_options":{})", "stream_options");
  expect_400(R"(,"top_k":5)", "top_k");
  expect_400(R"(,"parallel_tool_calls":false)", "parallel_tool_calls", "cannot be enforced");
  expect_400(R"(,"tools":[{"type":"web_search_preview"}])", "tools", "web_search_preview");
  expect_400(R"(,"tools":[{"type":"file_search","vector_store_ids":[]}])", "tools", "file_search");
  expect_400(R"(,"tools":[{"type":"function","name":"f","defer_loading":true}])", "tools", "tools[0].defer_loading");
  expect_400(R"(,"tool_choice":{"type":"function","name":"f","strict":true},"tools":[{"type":"function","name":"f"}])",
             "tool_choice", "tool_choice.strict");
  expect_400(R"(,"tool_choice":"required","tools":[{"type":"function","name":"f"}],"text":{"format":{"type":"json_object"}})",
             "tool_choice", "either the calls or the JSON");
  expect_400(R"(,"tool_choice":{"type":"web_search_preview"})", "tool_choice", "web_search_preview");
  expect_400(R"(,"reasoning":{"effort":"low","summary":"auto"})", "reasoning", "summary");
  expect_400(R"(,"reasoning":{"generate_summary":"concise"})", "reasoning", "generate_summary");
  expect_400(R"(,"text":{"verbosity":"low"})", "text", "text.verbosity");
}

TEST(ResponsesRequest, BadValuesAreNamed) {
  expect_400(R"(,"model":5)", "model");
  EXPECT_EQ(responses_error(R"({"model":"gpt-9","input":"x"})").status, 404);
  expect_400(R"(,"stream":"yes")", "stream");
  expect_400(R"(,"temperature":"hot")", "temperature");
  expect_400(R"(,"temperature":3)", "temperature");
  expect_400(R"(,"top_p":0)", "top_p");
  expect_400(R"(,"seed":"x")", "seed");
  expect_400(R"(,"max_output_tokens":0)", "max_output_tokens");
  expect_400(R"(,"max_output_tokens":"5")", "max_output_tokens");
  expect_400(R"(,"instructions":5)", "instructions");
  expect_400(R"(,"metadata":[])", "metadata");
  expect_400(R"(,"metadata":{"k":1})", "metadata");
  expect_400(R"(,"user":5)", "user");
  expect_400(R"(,"store":"no")", "store");
  expect_400(R"(,"background":1)", "background");
  expect_400(R"(,"include":"x")", "include");
  expect_400(R"(,"truncation":5)", "truncation");
  expect_400(R"(,"service_tier":5)", "service_tier");
  expect_400(R"(,"parallel_tool_calls":"yes")", "parallel_tool_calls");
  expect_400(R"(,"reasoning":"high")", "reasoning");
  expect_400(R"(,"reasoning":{"effort":"extreme"})", "reasoning");
  expect_400(R"(,"text":"json")", "text");
  expect_400(R"(,"text":{"format":{"type":"xml"}})", "text", "text.format.type");
  expect_400(R"(,"text":{"format":{"type":"json_schema","name":"x"}})", "text", "text.format.schema");
  expect_400(R"(,"text":{"format":{"type":"json_schema","schema":{"type":"integer","minimum":0}}})", "text", "minimum");
  expect_400(R"(,"tools":{})", "tools");
  expect_400(R"(,"tools":[{"type":"function"}])", "tools", "tools[0].name");
  expect_400(R"(,"tools":[{"type":"function","name":"f","parameters":"x"}])", "tools", "tools[0].parameters");
  expect_400(R"(,"tools":[{"type":"function","name":"f","description":5}])", "tools", "tools[0].description");
  expect_400(R"(,"tools":[{"type":"function","name":"f","strict":"yes"}])", "tools", "tools[0].strict");
  expect_400(R"(,"tool_choice":"sometimes")", "tool_choice");
  expect_400(R"(,"tool_choice":5)", "tool_choice");
  expect_400(R"(,"tool_choice":"required")", "tool_choice", "no tools");
  expect_400(R"(,"tool_choice":{"type":"function","name":"g"},"tools":[{"type":"function","name":"f"}])", "tool_choice",
             "not in 'tools'");
}

TEST(ResponsesRequest, BadInputItemsAreNamed) {
  auto input_400 = [](const std::string& input, const std::string& why) {
    const ApiError e = responses_error(R"({"input":)" + input + "}");
    EXPECT_EQ(e.status, 400) << input;
    EXPECT_EQ(e.param, "input") << input << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
  };
  EXPECT_EQ(responses_error("{}").param, "input");
  input_400("5", "string or an array");
  input_400("[]", "at least one item");
  input_400("[5]", "input[0]' must be an object");
  input_400(R"([{"role":"tool","content":"x"}])", "input[0].role");
  input_400(R"([{"role":"user"}])", "input[0].content");
  input_400(R"([{"role":"user","content":5}])", "input[0].content");
  input_400(R"([{"role":"user","content":[{"type":"input_image","image_url":"data:"}]}])", "'input_image' content");
  input_400(R"([{"role":"user","content":[{"type":"input_file","file_id":"f"}]}])", "'input_file' content");
  input_400(R"([{"role":"user","content":[{"type":"input_text"}]}])", "input[0].content[0].text");
  input_400(R"([{"role":"user","content":[{"type":"text","text":"x"}]}])", "input_text and output_text");
  input_400(R"([{"role":"user","content":"x","name":"bob"}])", "input[0].name");
  input_400(R"([{"type":"function_call","name":"f","arguments":"{}"}])", "input[0].call_id");
  input_400(R"([{"type":"function_call","call_id":"c","name":"f","arguments":{}}])", "input[0].arguments");
  input_400(R"([{"type":"function_call_output","call_id":"c"}])", "input[0].output");
  input_400(R"([{"type":"function_call_output","output":"x"}])", "input[0].call_id");
  input_400(R"([{"type":"reasoning","encrypted_content":"abc"}])", "encrypted_content");
  input_400(R"([{"type":"reasoning","content":[{"type":"summary_text","text":"x"}]}])", "reasoning_text part");
  input_400(R"([{"type":"item_reference","id":"msg_1"}])", "item_reference");
  input_400(R"([{"type":"web_search_call","id":"ws_1"}])", "web_search_call");
  input_400(R"([{"type":5}])", "input[0].type");
}

TEST(ResponsesRequest, ContextLimits) {
  const size_t plen = parse_responses_request(R"({"input":"Hello"})", model_info()).api.prompts[0].size();
  const ApiError e = responses_error(R"({"input":"Hello"})", int64_t(plen));
  EXPECT_EQ(e.code, "context_length_exceeded");
  EXPECT_EQ(e.param, "input");
  const ApiError m = responses_error(R"({"input":"Hello","max_output_tokens":100})", int64_t(plen) + 99);
  EXPECT_EQ(m.code, "context_length_exceeded");
  EXPECT_EQ(m.param, "max_output_tokens");
  EXPECT_NO_THROW(parse_responses_request(R"({"input":"Hello","max_output_tokens":99})", model_info(int64_t(plen) + 99)));
}

}  // namespace
}  // namespace strata::server
