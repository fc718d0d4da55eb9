// The web chat page in a real headless Chromium: runs tests/server/web/web_chat.test.mjs
// (puppeteer-core from scripts/setup.d/npm-puppeteer.sh, driving the system's Chromium over the
// DevTools protocol) against the real `strata serve` on a flash-tiny model made in a temporary
// directory. The screenshot goes to test-output/web_chat.png beside the strata binary.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

#include "cli/run_command.h"

namespace {

using strata::test::run_shell;
using strata::test::run_strata;
using strata::test::shell_quote;

// $CHROMIUM, else the first of Debian's and other distributions' names on PATH; "" if none.
std::string find_chromium() {
  if (const char* c = std::getenv("CHROMIUM"); c && *c) return c;
  auto [code, out] = run_shell("command -v chromium || command -v chromium-browser || command -v google-chrome");
  if (code != 0) return "";
  return out.substr(0, out.find('\n'));
}

TEST(WebChat, PageInHeadlessChromium) {
  const std::string chromium = find_chromium();
  if (chromium.empty()) GTEST_SKIP() << "chromium is not installed (scripts/setup.sh installs Debian's chromium package)";
  ASSERT_EQ(run_shell("node --version").first, 0) << "node is required";
  const std::string src = STRATA_SOURCE_DIR;
  ASSERT_TRUE(std::filesystem::exists(src + "/tests/server/web/node_modules/puppeteer-core/package.json"))
      << "run scripts/setup.d/npm-puppeteer.sh";
  char tmpl[] = "/tmp/strata_web_chat_XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl, model = dir + "/flash-tiny";
  auto made = run_strata("make-model --preset flash-tiny --seed 0 --out " + shell_quote(model));
  ASSERT_EQ(made.code, 0) << made.err;
  const auto binary = std::filesystem::absolute(STRATA_BINARY);
  const auto out_dir = binary.parent_path() / "test-output";
  // HOME in the temporary folder: Chromium writes its profile and crash folders there.
  auto [code, out] = run_shell("cd " + shell_quote(src + "/tests/server/web") + " && HOME=" + shell_quote(dir) +
                               " STRATA_BINARY=" + shell_quote(binary.string()) + " STRATA_MODEL_DIR=" + shell_quote(model) +
                               " CHROMIUM=" + shell_quote(chromium) + " STRATA_WEB_CHAT_OUT=" + shell_quote(out_dir.string()) +
                               " timeout 120 node web_chat.test.mjs");
  std::filesystem::remove_all(dir);
  std::cout << out;
  EXPECT_EQ(code, 0) << out;
}

}  // namespace
