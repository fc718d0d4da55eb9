// `strata generate --json-schema FILE` / `--json`: the output decodes under the schema's grammar.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "run_command.h"
#include "tiny_checkpoint.h"

namespace strata {
namespace {
using test::run_strata;
using test::shell_quote;

TEST(GenerateStructured, OutputIsJsonOfTheSchema) {
  test::TinyCheckpoint tiny("generate_schema", 4);
  const std::string schema = tiny.dir + "/schema.json";
  std::ofstream(schema) << R"({"type":"object","properties":{"answer":{"enum":["yes","no"]},"n":{"type":"integer"},
                               "tags":{"type":"array","items":{"type":"boolean"},"maxItems":3}},"required":["answer","n","tags"]})";
  for (int seed : {1, 2, 3}) {
    auto r = run_strata("generate --model " + shell_quote(tiny.dir) + " --prompt 'Answer:' --temperature 1 --seed " +
                        std::to_string(seed) + " --max-tokens 200 --json-schema " + shell_quote(schema));
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.err.find("finish: stop"), std::string::npos) << r.err;
    const auto j = nlohmann::ordered_json::parse(r.out);
    EXPECT_TRUE(j.at("answer") == "yes" || j.at("answer") == "no") << r.out;
    EXPECT_TRUE(j.at("n").is_number_integer());
    EXPECT_LE(j.at("tags").size(), 3u);
  }
  std::ofstream(tiny.dir + "/bad.json") << R"({"type":"string","pattern":"^a"})";
  auto bad = run_strata("generate --model " + shell_quote(tiny.dir) + " --prompt x --json-schema " +
                        shell_quote(tiny.dir + "/bad.json"));
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.err.find("'pattern'"), std::string::npos) << bad.err;
  auto missing = run_strata("generate --model " + shell_quote(tiny.dir) + " --prompt x --json-schema " +
                            shell_quote(tiny.dir + "/none.json"));
  EXPECT_NE(missing.code, 0);
  EXPECT_NE(missing.err.find("cannot open"), std::string::npos) << missing.err;
  auto both = run_strata("generate --model " + shell_quote(tiny.dir) + " --prompt x --json --json-schema " +
                         shell_quote(schema));
  EXPECT_NE(both.code, 0);
}

}  // namespace
}  // namespace strata
