// `strata tokenize`: ids as a JSON array, --decode back to text, one-line errors.
#include <gtest/gtest.h>

#include <string>

#include "run_command.h"

using strata::test::run_strata;
using strata::test::shell_quote;

namespace {
std::string model(const char* name) { return shell_quote(std::string(STRATA_SHARED_DIR) + "/tokenizers/" + name); }
}  // namespace

TEST(TokenizeCli, EncodesToJsonArray) {
  auto r = run_strata("tokenize --model " + model("qwen3") + " --text " + shell_quote("Hello world<|im_end|>"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "[9707,1879,151645]\n");
  r = run_strata("tokenize --model " + model("deepseek-v3") + " --add-special --text " + shell_quote("Hello world"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "[0,19923,2058]\n");
}

TEST(TokenizeCli, DecodesIds) {
  auto r = run_strata("tokenize --model " + model("qwen3") + " --decode 9707,1879,151645");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "Hello world<|im_end|>\n");
  r = run_strata("tokenize --model " + model("qwen3") + " --skip-special --decode 9707,1879,151645");
  EXPECT_EQ(r.out, "Hello world\n");
}

TEST(TokenizeCli, OneLineErrors) {
  auto r = run_strata("tokenize --model " + model("qwen3") + " --decode 9707,999999");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("999999"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  r = run_strata("tokenize --model " + model("qwen3") + " --decode 1,x");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("\"x\""), std::string::npos) << r.err;
  r = run_strata("tokenize --model /nonexistent --text hi");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("no tokenizer.json"), std::string::npos) << r.err;
}
