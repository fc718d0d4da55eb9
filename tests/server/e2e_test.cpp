// Runs tests/server/e2e.test.mjs and qwen3_5_e2e.test.mjs (node --test with the official openai
// client) against the real `strata serve` binary and a flash-tiny or a qwen3.5-tiny model made
// in a temporary directory.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "cli/run_command.h"
#include "cli/checkpoint_without.h"

namespace {

using strata::test::run_shell;
using strata::test::run_strata;
using strata::test::shell_quote;

TEST(ServerEndToEnd, OpenAIClientAgainstQwen35) {
  ASSERT_EQ(run_shell("node --version").first, 0) << "node is required";
  const std::string src = STRATA_SOURCE_DIR;
  ASSERT_TRUE(std::filesystem::exists(src + "/tests/server/npm/node_modules/openai/package.json"))
      << "run scripts/setup.d/npm-openai.sh";
  char tmpl[] = "/tmp/strata_e2e_qwen_XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl, model = dir + "/qwen3.5-tiny", no_mtp = dir + "/no-mtp";
  auto made = run_strata("make-model --preset qwen3.5-tiny --seed 3 --out " + shell_quote(model) + " --tokenizer " +
                         shell_quote(std::string(STRATA_SHARED_DIR) + "/tokenizers/qwen3"));
  ASSERT_EQ(made.code, 0) << made.err;
  ASSERT_GT(strata::test::copy_checkpoint_without(model, no_mtp, "mtp."), 0);
  auto [code, out] = run_shell("cd " + shell_quote(src + "/tests/server") + " && STRATA_BINARY=" +
                               shell_quote(std::filesystem::absolute(STRATA_BINARY).string()) + " STRATA_MODEL_DIR=" +
                               shell_quote(model) + " STRATA_NO_MTP_DIR=" + shell_quote(no_mtp) +
                               " timeout 600 node --test qwen3_5_e2e.test.mjs");
  std::filesystem::remove_all(dir);
  EXPECT_EQ(code, 0) << out;
}

TEST(ServerEndToEnd, OpenAIClientAgainstStrataServe) {
  // Until the batching engine lands, `strata serve` is not built in (cli/cmd_serve.cpp needs it).
  if (run_strata("serve --help").out.find("--api-key") == std::string::npos)
    GTEST_SKIP() << "this strata binary has no serve command";
  ASSERT_EQ(run_shell("node --version").first, 0) << "node is required";
  const std::string src = STRATA_SOURCE_DIR;
  ASSERT_TRUE(std::filesystem::exists(src + "/tests/server/npm/node_modules/openai/package.json"))
      << "run scripts/setup.d/npm-openai.sh";
  char tmpl[] = "/tmp/strata_e2e_XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl, model = dir + "/flash-tiny";
  auto made = run_strata("make-model --preset flash-tiny --seed 0 --out " + shell_quote(model));
  ASSERT_EQ(made.code, 0) << made.err;
  auto [code, out] = run_shell("cd " + shell_quote(src + "/tests/server") + " && STRATA_BINARY=" +
                               shell_quote(std::filesystem::absolute(STRATA_BINARY).string()) + " STRATA_MODEL_DIR=" + shell_quote(model) +
                               " timeout 600 node --test e2e.test.mjs");
  std::filesystem::remove_all(dir);
  EXPECT_EQ(code, 0) << out;
}

TEST(ServerEndToEnd, ResponsesApiWithOpenAIClient) {
  if (run_strata("serve --help").out.find("--api-key") == std::string::npos)
    GTEST_SKIP() << "this strata binary has no serve command";
  ASSERT_EQ(run_shell("node --version").first, 0) << "node is required";
  const std::string src = STRATA_SOURCE_DIR;
  ASSERT_TRUE(std::filesystem::exists(src + "/tests/server/npm/node_modules/openai/package.json"))
      << "run scripts/setup.d/npm-openai.sh";
  char tmpl[] = "/tmp/strata_e2e_resp_XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl, model = dir + "/flash-tiny";
  auto made = run_strata("make-model --preset flash-tiny --seed 0 --out " + shell_quote(model));
  ASSERT_EQ(made.code, 0) << made.err;
  auto [code, out] = run_shell("cd " + shell_quote(src + "/tests/server") + " && STRATA_BINARY=" +
                               shell_quote(std::filesystem::absolute(STRATA_BINARY).string()) + " STRATA_MODEL_DIR=" +
                               shell_quote(model) + " timeout 300 node --test responses.test.mjs");
  std::filesystem::remove_all(dir);
  EXPECT_EQ(code, 0) << out;
}

}  // namespace
