#include "text/chat_format.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "text/jinja_chat_format.h"

namespace strata {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

const std::string kQwen3 = STRATA_SHARED_DIR "/tokenizers/qwen3";
const std::string kDsv4 = STRATA_SHARED_DIR "/conformance/deepseek-v4-encoding/";

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f.good()) << path;
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A scratch model directory, removed at the end of the test.
struct TempDir {
  fs::path path = fs::temp_directory_path() / ("strata-chat-format-" + std::to_string(::getpid()) + "-" +
                                               ::testing::UnitTest::GetInstance()->current_test_info()->name());
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
  void write(const std::string& name, const std::string& text) const { std::ofstream(path / name, std::ios::binary) << text; }
};

const Json kHello = Json::parse(R"([{"role": "user", "content": "Hello"}])");

TEST(ChatFormat, Qwen3TemplateFromTheModelDirectory) {
  auto f = load_chat_format(kQwen3, "qwen3");
  EXPECT_EQ(f->name(), "jinja");
  ChatRenderOptions o;
  EXPECT_EQ(f->render(kHello, nullptr, o),
            "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
  o.thinking = true;
  EXPECT_EQ(f->render(kHello, nullptr, o), "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n");
  o.add_generation_prompt = false;
  EXPECT_EQ(f->render(kHello, nullptr, o), "<|im_start|>user\nHello<|im_end|>\n");
  // chat_template_kwargs win over the thinking flag.
  o = {};
  o.thinking = true;
  o.template_kwargs = {{"enable_thinking", false}};
  EXPECT_NE(f->render(kHello, nullptr, o).find("<think>\n\n</think>"), std::string::npos);
  // Neither prompt leaves a <think> open: a Qwen3 model opens it itself.
  EXPECT_FALSE(f->output_starts_in_reasoning(f->render(kHello, nullptr, o), o));
}

TEST(ChatFormat, Qwen3ToolsAndToolResults) {
  auto f = load_chat_format(kQwen3, "qwen3");
  const Json tools = Json::parse(R"([{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}])");
  const Json messages = Json::parse(R"([
    {"role": "user", "content": "Weather?"},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
      "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "5 C"}])");
  const std::string p = f->render(messages, tools, ChatRenderOptions{});
  EXPECT_NE(p.find("<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"parameters\": {\"type\": \"object\"}}}\n</tools>"),
            std::string::npos)
      << p;
  EXPECT_NE(p.find("<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call><|im_end|>"),
            std::string::npos)
      << p;
  EXPECT_NE(p.find("<|im_start|>user\n<tool_response>\n5 C\n</tool_response><|im_end|>\n"), std::string::npos) << p;
}

TEST(ChatFormat, TemplateVariables) {
  auto f = load_chat_format(kQwen3, "qwen3");
  const auto& j = dynamic_cast<const JinjaChatFormat&>(*f);
  ChatRenderOptions o;
  o.thinking = true;
  o.reasoning_effort = "high";
  o.template_kwargs = {{"custom", 1}, {"add_generation_prompt", false}};
  const Json v = j.variables(kHello, nullptr, o);
  EXPECT_EQ(v["messages"], kHello);
  EXPECT_TRUE(v["tools"].is_null());
  EXPECT_TRUE(v["documents"].is_null());
  EXPECT_EQ(v["eos_token"], "<|im_end|>");
  EXPECT_EQ(v["pad_token"], "<|endoftext|>");
  EXPECT_FALSE(v.contains("bos_token"));  // null in Qwen3's tokenizer_config.json
  EXPECT_EQ(v["enable_thinking"], true);
  EXPECT_EQ(v["reasoning_effort"], "high");
  EXPECT_EQ(v["custom"], 1);
  EXPECT_EQ(v["add_generation_prompt"], false);  // kwargs override
  o.template_kwargs = Json::array();
  EXPECT_THROW(j.variables(kHello, nullptr, o), Error);
}

TEST(ChatFormat, OutputStartsInReasoningAfterAnOpenThink) {
  auto f = jinja_chat_format("{{ messages[0].content }}{% if add_generation_prompt %}<think>\n{% endif %}", Json::object(), "");
  ChatRenderOptions o;
  const std::string prompt = f->render(kHello, nullptr, o);
  EXPECT_EQ(prompt, "Hello<think>\n");
  EXPECT_TRUE(f->output_starts_in_reasoning(prompt, o));
  EXPECT_FALSE(f->output_starts_in_reasoning("x<think>\n\n</think>\n\n", o));
  EXPECT_FALSE(f->output_starts_in_reasoning("x<think> not at the end", o));
  EXPECT_FALSE(f->output_starts_in_reasoning("no tag", o));
  // Its parser then starts in the reasoning.
  auto p = f->parser(true);
  p->feed("Because.</think>\n\nYes.");
  p->finish();
  EXPECT_EQ(p->result().reasoning_content, "Because.");
  EXPECT_EQ(p->result().content, "Yes.");
}

TEST(ChatFormat, TemplateErrorsAreErrors) {
  auto f = jinja_chat_format("{{ raise_exception('only user messages') }}", Json::object(), "");
  try {
    f->render(kHello, nullptr, ChatRenderOptions{});
    FAIL() << "rendered";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("only user messages"), std::string::npos) << e.what();
  }
  EXPECT_THROW(jinja_chat_format("{% if %}", Json::object(), ""), Error);
}

TEST(ChatFormat, WhereTheTemplateComesFrom) {
  TempDir d;
  EXPECT_THROW(load_chat_format(d.path.string(), "llama"), Error);
  try {
    load_chat_format(d.path.string(), "llama");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the model has no chat template"), std::string::npos) << e.what();
  }
  // A list of named templates: "default" is used. Tokens may be AddedToken objects.
  d.write("tokenizer_config.json", R"({
    "bos_token": {"__type": "AddedToken", "content": "<s>", "lstrip": false},
    "eos_token": "</s>", "unk_token": null,
    "additional_special_tokens": ["<x>", {"content": "<y>"}],
    "chat_template": [{"name": "tool_use", "template": "TOOLS"},
                      {"name": "default", "template": "{{ bos_token }}{{ messages[0].content }}{{ eos_token }}{{ additional_special_tokens }}"}]})");
  EXPECT_EQ(load_chat_format(d.path.string(), "llama")->render(kHello, nullptr, {}), "<s>Hello</s>[\"<x>\", \"<y>\"]");
  // chat_template.jinja takes precedence.
  d.write("chat_template.jinja", "FILE {{ messages|length }}\n");
  EXPECT_EQ(load_chat_format(d.path.string(), "llama")->render(kHello, nullptr, {}), "FILE 1");
  fs::remove(d.path / "chat_template.jinja");
  d.write("tokenizer_config.json", R"({"chat_template": [{"name": "tool_use", "template": "x"}]})");
  EXPECT_THROW(load_chat_format(d.path.string(), "llama"), Error);
  d.write("tokenizer_config.json", R"({"chat_template": "{% for %}"})");
  try {
    load_chat_format(d.path.string(), "llama");
    FAIL() << "loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("chat template: jinja:"), std::string::npos) << e.what();
  }
  d.write("tokenizer_config.json", "{not json");
  EXPECT_THROW(load_chat_format(d.path.string(), "llama"), Error);
  // model_type comes from config.json.
  EXPECT_EQ(model_type_of(d.path.string()), "");
  d.write("config.json", R"({"model_type": "qwen3"})");
  EXPECT_EQ(model_type_of(d.path.string()), "qwen3");
}

TEST(ChatFormat, DeepSeekV4IsItsOwnEncoder) {
  TempDir d;  // no template needed
  auto f = load_chat_format(d.path.string(), "deepseek_v4");
  EXPECT_EQ(f->name(), "deepseek_v4");
  // The official conformance vectors, through the interface.
  const Json manifest = Json::parse(read_file(kDsv4 + "MANIFEST.json"));
  for (const Json& c : manifest["cases"]) {
    const Json input = Json::parse(read_file(kDsv4 + c["input"].get<std::string>()));
    ChatRenderOptions o;
    o.thinking = c["thinking_mode"] == "thinking";
    const Json messages = input.is_object() ? input["messages"] : input;
    const Json tools = input.is_object() ? input["tools"] : Json(nullptr);
    EXPECT_EQ(f->render(messages, tools, o), read_file(kDsv4 + c["output"].get<std::string>())) << c["input"];
    EXPECT_EQ(f->output_starts_in_reasoning("", o), o.thinking);
  }
  // Effort: minimal/low/medium keep the default, max adds the Think-Max prompt.
  ChatRenderOptions o;
  o.thinking = true;
  const std::string plain = f->render(kHello, nullptr, o);
  for (const char* e : {"minimal", "low", "medium", "high"}) {
    o.reasoning_effort = e;
    EXPECT_EQ(f->render(kHello, nullptr, o), plain) << e;
  }
  o.reasoning_effort = "max";
  EXPECT_NE(f->render(kHello, nullptr, o), plain);
  o.reasoning_effort = "extreme";
  EXPECT_THROW(f->render(kHello, nullptr, o), Error);
  ChatOptions copt;
  copt.thinking_mode = "chat";
  EXPECT_EQ(f->render(kHello, nullptr, ChatRenderOptions{}), encode_chat(kHello, copt));
}

TEST(ChatFormat, DeepSeekV4ParserClosesTheTurn) {
  auto f = deepseek_v4_chat_format();
  auto p = f->parser(true);
  std::string reasoning, content;
  for (const char* piece : {"Thin", "king.</th", "ink>Ans", "wer."})
    for (const StreamEvent& e : p->feed(piece)) (e.kind == StreamEvent::Kind::kReasoning ? reasoning : content) += e.text;
  for (const StreamEvent& e : p->finish()) (e.kind == StreamEvent::Kind::kReasoning ? reasoning : content) += e.text;
  EXPECT_EQ(reasoning, "Thinking.");
  EXPECT_EQ(content, "Answer.");
  EXPECT_EQ(p->result().content, "Answer.");
  // With the end token in the text it is not added again; malformed output still throws.
  auto q = f->parser(false);
  q->feed("Hi<｜end▁of▁sentence｜>");
  EXPECT_NO_THROW(q->finish());
  auto bad = f->parser(true);
  bad->feed("no end of reasoning");
  EXPECT_THROW(bad->finish(), Error);
}

}  // namespace
}  // namespace strata
