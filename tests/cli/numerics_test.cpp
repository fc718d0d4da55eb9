// `--numerics exact|fast` and STRATA_NUMERICS through the binary, on every command that runs a
// model: the flag, else the variable, else the command's default; a bad value is a usage error
// naming the choices. Each command reports the profile it ran with (read back from the process
// setting, not from its options), which is what these tests look at; what each profile computes
// is tested in tests/kernels and tests/models.
#include <gtest/gtest.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <functional>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/numerics_defaults.h"
#include "run_command.h"
#include "tiny_checkpoint.h"

namespace strata {
namespace {
using test::CommandResult;
using test::run_strata;
using test::shell_quote;

const char* const kUnset = "env -u STRATA_NUMERICS";

// The profile a run reports, "" when it reports none.
std::string matched(const std::string& text, const char* pattern) {
  std::smatch m;
  return std::regex_search(text, m, std::regex(pattern)) ? m[1].str() : "";
}

struct ModelCommand {
  std::string name, args;  // args after the command's name, with {model} for the checkpoint
  std::function<std::string(const CommandResult&)> reported;
};

const std::string& logits_out() {
  static const std::string p =
      (std::filesystem::temp_directory_path() / ("strata_numerics_" + std::to_string(::getpid()) + ".npy")).string();
  return p;
}

std::vector<ModelCommand> commands() {
  return {
      {"generate", "--model {model} --ids 1,2 --max-tokens 1 --print-ids",
       [](const CommandResult& r) { return matched(r.err, R"(; numerics: (\w+))"); }},
      {"chat", "--model {model} < /dev/null",
       [](const CommandResult& r) { return matched(r.err, R"(strata chat: numerics (\w+))"); }},
      {"logits", "--model {model} --ids 1,2,3 --prefill 2 --out " + shell_quote(logits_out()),
       [](const CommandResult& r) { return matched(r.err, R"(float32, numerics (\w+))"); }},
      {"bench", "--model {model} --skip-probes --json --prompt-tokens 2 --decode-tokens 1",
       [](const CommandResult& r) {
         const auto j = nlohmann::json::parse(r.out, nullptr, false);
         return j.is_object() && j.contains("numerics") && j["numerics"].is_string() ? j["numerics"].get<std::string>() : "";
       }},
  };
}

class NumericsCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { tiny_ = std::make_unique<test::TinyCheckpoint>("numerics", 6); }
  static void TearDownTestSuite() {
    tiny_.reset();
    std::filesystem::remove(logits_out());
  }

  // Runs c with `extra` options after its own and `env` before the binary.
  static CommandResult run(const ModelCommand& c, const std::string& extra, const std::string& env) {
    std::string args = c.args;
    args.replace(args.find("{model}"), 7, shell_quote(tiny_->dir));
    // the options go before a redirection (chat's "< /dev/null")
    const size_t redirect = args.find(" <");
    args.insert(redirect == std::string::npos ? args.size() : redirect, extra.empty() ? "" : " " + extra);
    return run_strata(c.name + " " + args, env);
  }
  // The profile c reports when run so; a failed run fails the test.
  static std::string profile(const ModelCommand& c, const std::string& extra, const std::string& env) {
    const auto r = run(c, extra, env);
    EXPECT_EQ(r.code, 0) << c.name << " " << extra << " with " << env << ": " << r.err;
    return c.reported(r);
  }

  static std::unique_ptr<test::TinyCheckpoint> tiny_;
};
std::unique_ptr<test::TinyCheckpoint> NumericsCli::tiny_;

TEST_F(NumericsCli, WithoutTheFlagStrataNumericsChooses) {
  for (const auto& c : commands()) {
    EXPECT_EQ(profile(c, "", "STRATA_NUMERICS=fast"), "fast") << c.name;
    EXPECT_EQ(profile(c, "", "STRATA_NUMERICS=exact"), "exact") << c.name;
  }
}

TEST_F(NumericsCli, TheFlagBeatsStrataNumerics) {
  for (const auto& c : commands()) {
    EXPECT_EQ(profile(c, "--numerics exact", "STRATA_NUMERICS=fast"), "exact") << c.name;
    EXPECT_EQ(profile(c, "--numerics fast", "STRATA_NUMERICS=exact"), "fast") << c.name;
  }
}

TEST_F(NumericsCli, WithNeitherTheCommandsDefault) {
  for (const auto& c : commands())
    EXPECT_EQ(profile(c, "", kUnset), numerics_name(cli::default_numerics(c.name))) << c.name;
}

// logits is the numerical contract with the reference: exact unless asked otherwise, whatever
// the other commands' defaults become.
TEST(NumericsDefaults, LogitsIsExactAndEveryModelCommandHasOne) {
  EXPECT_EQ(cli::default_numerics("logits"), strata::Numerics::exact);
  for (const char* c : {"generate", "chat", "serve", "bench", "logits"}) EXPECT_NO_THROW(cli::default_numerics(c)) << c;
  EXPECT_THROW(cli::default_numerics("tokenize"), std::logic_error);
}

// A bad --numerics is a usage error like any bad option value (CLI11's exit code), before
// anything loads; a bad STRATA_NUMERICS is an error naming the variable. Both name the choices.
TEST_F(NumericsCli, ABadValueIsAnErrorNamingTheChoices) {
  auto all = commands();
  all.push_back({"serve", "--model {model} --port 0", nullptr});
  for (const auto& c : all) {
    const auto flag = run(c, "--numerics turbo", kUnset);
    EXPECT_EQ(flag.code, int(CLI::ExitCodes::ValidationError)) << c.name << ": " << flag.err;
    for (const char* word : {"--numerics", "'turbo'", "exact", "fast"})
      EXPECT_NE(flag.err.find(word), std::string::npos) << c.name << " misses " << word << ": " << flag.err;
    const auto env = run(c, "", "STRATA_NUMERICS=turbo");
    EXPECT_EQ(env.code, 1) << c.name << ": " << env.err;
    for (const char* word : {"STRATA_NUMERICS", "'turbo'", "exact", "fast"})
      EXPECT_NE(env.err.find(word), std::string::npos) << c.name << " misses " << word << ": " << env.err;
  }
}

// bench --numerics with several profiles: one labelled pass each, in the order given, on the
// same model; with one, the pass's keys stay at the top as without the flag.
TEST_F(NumericsCli, BenchRunsSeveralProfilesSideBySide) {
  const ModelCommand bench = commands().back();
  ASSERT_EQ(bench.name, "bench");
  for (const std::string list : {"exact fast", "fast,exact"}) {
    const auto r = run(bench, "--numerics " + list, kUnset);
    ASSERT_EQ(r.code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    const std::vector<std::string> want = list == "exact fast" ? std::vector<std::string>{"exact", "fast"}
                                                               : std::vector<std::string>{"fast", "exact"};
    EXPECT_EQ(j["numerics"], nlohmann::json(want)) << r.out;
    EXPECT_FALSE(j.contains("prefill")) << "a pass's keys belong under runs: " << r.out;
    ASSERT_TRUE(j.contains("runs")) << r.out;
    ASSERT_EQ(j["runs"].size(), 2u) << r.out;
    for (size_t i = 0; i < 2; ++i) {
      const auto& run = j["runs"][i];
      EXPECT_EQ(run["numerics"], want[i]) << r.out;
      EXPECT_GT(run["prefill"]["tokens_per_s"].get<double>(), 0.0) << r.out;
      EXPECT_GT(run["decode"]["tokens_per_s"].get<double>(), 0.0) << r.out;
    }
  }
  const auto one = run(bench, "--numerics fast", kUnset);
  ASSERT_EQ(one.code, 0) << one.err;
  const auto j = nlohmann::json::parse(one.out);
  EXPECT_EQ(j["numerics"], "fast");
  EXPECT_TRUE(j.contains("prefill")) << one.out;
  EXPECT_FALSE(j.contains("runs")) << one.out;
}

TEST_F(NumericsCli, BenchTextLabelsEachProfileAndComparesThem) {
  const auto r = run_strata("bench --model " + shell_quote(tiny_->dir) +
                                " --skip-probes --prompt-tokens 2 --decode-tokens 1 --numerics exact fast",
                            kUnset);
  ASSERT_EQ(r.code, 0) << r.err;
  const size_t exact = r.out.find("numerics: exact\nprefill:"), fast = r.out.find("numerics: fast\nprefill:");
  ASSERT_NE(exact, std::string::npos) << r.out;
  ASSERT_NE(fast, std::string::npos) << r.out;
  EXPECT_LT(exact, fast) << r.out;
  EXPECT_NE(r.out.find("numerics fast vs exact: prefill "), std::string::npos) << r.out;
}

TEST(NumericsVersion, ReportsStrataNumericsOrTheDefaults) {
  const auto env = run_strata("version", "STRATA_NUMERICS=fast");
  ASSERT_EQ(env.code, 0) << env.err;
  EXPECT_NE(env.out.find("numerics: fast (STRATA_NUMERICS)"), std::string::npos) << env.out;
  const auto unset = run_strata("version", kUnset);
  ASSERT_EQ(unset.code, 0) << unset.err;
  EXPECT_NE(unset.out.find("logits exact"), std::string::npos) << unset.out;
}

}  // namespace
}  // namespace strata
