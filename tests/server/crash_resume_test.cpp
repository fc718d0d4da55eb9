// Runs tests/server/crash_resume.test.mjs (node --test, Node's standard library only) against
// the real `strata serve --journal` on a flash-tiny model made in a temporary directory: killed
// with SIGKILL at random points and restarted, every client's answer equals an uninterrupted one;
// a request cancelled with DELETE is not computed again after a restart, yet answers as before;
// one a shutdown cancelled continues from the snapshot it left.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

#include "cli/run_command.h"

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr int kKills = 9;  // the release build's run makes the full 24
#else
constexpr int kKills = 24;
#endif

using strata::test::run_shell;
using strata::test::run_strata;
using strata::test::shell_quote;

TEST(ServeCrashResume, KilledAtRandomPointsEveryAnswerEqualsTheUninterruptedOne) {
  if (run_strata("serve --help").out.find("--journal") == std::string::npos)
    GTEST_SKIP() << "this strata binary has no serve command";
  ASSERT_EQ(run_shell("node --version").first, 0) << "node is required";
  const std::string src = STRATA_SOURCE_DIR;
  char tmpl[] = "/tmp/strata_crash_XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl, model = dir + "/flash-tiny";
  auto made = run_strata("make-model --preset flash-tiny --seed 0 --out " + shell_quote(model));
  ASSERT_EQ(made.code, 0) << made.err;
  auto [code, out] = run_shell("cd " + shell_quote(src + "/tests/server") + " && STRATA_BINARY=" +
                               shell_quote(std::filesystem::absolute(STRATA_BINARY).string()) + " STRATA_MODEL_DIR=" +
                               shell_quote(model) + " CRASH_KILLS=" + std::to_string(kKills) +
                               " timeout 300 node --test crash_resume.test.mjs");
  std::filesystem::remove_all(dir);
  EXPECT_EQ(code, 0) << out;
}

}  // namespace
