// `strata render` reproduces every official DeepSeek-V4 conformance prompt byte for byte;
// `strata parse` turns a completion back into a message.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "run_command.h"

namespace strata {
namespace {
using test::run_strata;
using test::shell_quote;

std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(Render, ConformanceVectorsByteForByte) {
  const std::string dir = std::string(STRATA_SHARED_DIR) + "/conformance/deepseek-v4-encoding/";
  auto manifest = nlohmann::json::parse(slurp(dir + "MANIFEST.json"));
  int n = 0;
  for (auto& c : manifest["cases"]) {
    const std::string mode = c.value("thinking_mode", "thinking");
    auto r = run_strata("render --thinking " + mode + " --messages " + shell_quote(dir + c["input"].get<std::string>()));
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, slurp(dir + c["output"].get<std::string>())) << c["input"];
    ++n;
  }
  EXPECT_EQ(n, 4);
}

TEST(Parse, CompletionToMessageAndErrors) {
  const std::string f = "/tmp/strata_parse_" + std::to_string(::getpid()) + ".txt";
  std::ofstream(f) << "Let me think.</think>Hello!<｜end▁of▁sentence｜>";
  auto r = run_strata("parse --thinking thinking < " + shell_quote(f));
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["reasoning_content"], "Let me think.");
  EXPECT_EQ(j["content"], "Hello!");
  std::ofstream(f) << "no end marker";
  r = run_strata("parse --thinking chat < " + shell_quote(f));
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("end"), std::string::npos) << r.err;
  r = run_strata("render --messages /nonexistent.json");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("/nonexistent.json"), std::string::npos) << r.err;
  std::remove(f.c_str());
}

// --model with a chat template: the template renders and its <think> / <tool_call> output parses.
TEST(RenderParse, ModelWithAChatTemplate) {
  const std::string qwen3 = std::string(STRATA_SHARED_DIR) + "/tokenizers/qwen3";
  const std::string f = "/tmp/strata_render_" + std::to_string(::getpid()) + ".json";
  std::ofstream(f) << R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}])";
  auto r = run_strata("render --model " + shell_quote(qwen3) + " --messages " + shell_quote(f));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
                   "<think>\n\n</think>\n\n");
  r = run_strata("render --model " + shell_quote(qwen3) + " --thinking thinking --no-generation-prompt --messages " + shell_quote(f));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
  r = run_strata("render --model " + shell_quote(qwen3) + " --template-kwargs '[1]' --messages " + shell_quote(f));
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("--template-kwargs must be a JSON object"), std::string::npos) << r.err;
  std::ofstream(f) << "<think>\nWhy not.\n</think>\n\nSure.\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>";
  r = run_strata("parse --model " + shell_quote(qwen3) + " < " + shell_quote(f));
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["reasoning_content"], "Why not.");
  EXPECT_EQ(j["content"], "Sure.");
  EXPECT_EQ(j["tool_calls"][0]["function"]["name"], "f");
  EXPECT_EQ(j["tool_calls"][0]["function"]["arguments"], "{\"a\": 1}");
  r = run_strata("render --model /nonexistent-model --messages " + shell_quote(f));
  EXPECT_NE(r.code, 0);
  std::remove(f.c_str());
}

}  // namespace
}  // namespace strata
