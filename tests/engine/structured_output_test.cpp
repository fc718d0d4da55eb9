// Structured output through the engine: a request under a JSON Schema ends in a JSON text of
// the schema, the same alone, batched among free-text requests, with speculative decoding, and
// after an export and import mid-way; a bad schema is refused at submit.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "engine/engine.h"
#include "engine/engine_harness.h"
#include "engine/request_snapshot.h"
#include "kernels/parallel.h"
#include "engine/dsv4_engine_fixture.h"
#include "models/dsv4_fixture.h"
#include "text/tokenizer.h"

namespace strata::engine {
namespace {

using json = nlohmann::json;
using testing::Collector;
using testing::Outcome;

using testing::shared;

const char* kSchema = R"({"type":"object","properties":{
  "answer":{"enum":["yes","no"]},"confident":{"type":"boolean"},"count":{"type":"integer"},
  "note":{"type":"string","maxLength":6}},"required":["answer","confident","count","note"]})";

Request structured_request(uint64_t id, uint64_t seed) {
  Request r;
  r.id = id;
  for (int t = 0; t < 20; ++t) r.prompt.push_back(int32_t(500 + 37 * t + int(id)));
  r.sampling.temperature = 1.0;
  r.sampling.seed = seed;
  r.sampling.max_tokens = 400;
  r.sampling.structured = StructuredOutput::schema(kSchema);
  return r;
}

std::map<uint64_t, Outcome> run(const std::vector<Request>& reqs, EngineOptions opt) {
  Collector c;
  {
    Engine eng(shared().model, shared().tok, opt);
    for (const auto& r : reqs) eng.submit(r, c.callback());
    c.wait_all(reqs.size());
  }
  return c.out;
}

void expect_schema_shape(const Outcome& o) {
  ASSERT_TRUE(o.error.empty()) << o.error;
  ASSERT_EQ(o.finish, FinishReason::stop) << o.text;
  const json j = json::parse(o.text);
  EXPECT_TRUE(j.at("answer") == "yes" || j.at("answer") == "no");
  EXPECT_TRUE(j.at("confident").is_boolean());
  EXPECT_TRUE(j.at("count").is_number_integer());
  EXPECT_LE(j.at("note").get<std::string>().size(), 6u * 4);
  EXPECT_EQ(j.size(), 4u);
}

TEST(StructuredOutput, EndsInTheSchemasJsonAloneBatchedAndSpeculative) {
  EngineOptions opt;
  opt.max_context = 512;
  std::vector<Request> alone{structured_request(1, 5), structured_request(2, 6)};
  const auto a = run(alone, opt);
  for (const auto& [id, o] : a) expect_schema_shape(o);
  EXPECT_NE(a.at(1).text, a.at(2).text);

  auto mixed = testing::mixed_requests(6);
  mixed.insert(mixed.begin() + 2, alone[0]);
  mixed.push_back(alone[1]);
  opt.max_running = 4;
  opt.max_batch_tokens = 24;
  kernels::set_num_threads(2);
  const auto b = run(mixed, opt);
  kernels::set_num_threads(0);
  EXPECT_EQ(b.at(1), a.at(1));
  EXPECT_EQ(b.at(2), a.at(2));

  opt.spec_tokens = 2;
  opt.spec_adaptive = false;
  const auto c = run(alone, opt);
  EXPECT_EQ(c.at(1), a.at(1));
  EXPECT_EQ(c.at(2), a.at(2));
}

TEST(StructuredOutput, ExportImportContinuesTheGrammar) {
  auto& s = shared();
  EngineOptions opt;
  opt.max_context = 512;
  const Request r = structured_request(7, 9);
  const Outcome expect = run({r}, opt).at(7);
  expect_schema_shape(expect);
  const std::string path =
      std::filesystem::temp_directory_path() / ("strata_structured_snapshot_" + std::to_string(::getpid()));
  testing::export_after_five(s.model, s.tok, opt, r, path);
  // The snapshot holds the tokens sampled when the engine took it (the export runs between
  // steps, so maybe a few after the fifth event).
  const RequestSnapshot snap = read_snapshot(path);
  const size_t k = snap.tokens.size() - r.prompt.size();
  ASSERT_GE(k, 5u);
  Collector second;
  {
    Engine eng(s.model, s.tok, opt);
    eng.import_request(path, second.callback());
    second.wait_all(1);
  }
  std::filesystem::remove(path);
  std::vector<int32_t> tokens(snap.tokens.begin() + long(r.prompt.size()), snap.tokens.end());
  const Outcome& b = second.out.begin()->second;
  std::vector<int32_t> joined(expect.tokens.begin(), expect.tokens.begin() + long(tokens.size()));
  EXPECT_EQ(tokens, joined);
  joined.insert(joined.end(), b.tokens.begin(), b.tokens.end());
  EXPECT_EQ(joined, expect.tokens);
}

TEST(StructuredOutput, GrammarStartsAfterTheReasoningEnd) {
  auto& s = shared();
  EngineOptions opt;
  opt.max_context = 512;
  Request r = structured_request(3, 1);
  // The end marker is forced to be sampled first by a huge bias; output must follow it as JSON.
  const int32_t end_marker = 42;
  r.sampling.structured->after_token = end_marker;
  r.sampling.logit_bias[end_marker] = 100.0;
  const Outcome o = run({r}, opt).at(3);
  ASSERT_FALSE(o.tokens.empty());
  EXPECT_EQ(o.tokens[0], end_marker);
  const std::string marker = s.tok->decode(std::vector<int32_t>{end_marker}, /*skip_special=*/true);
  ASSERT_EQ(o.text.substr(0, marker.size()), marker);
  Outcome rest = o;
  rest.text = o.text.substr(marker.size());
  expect_schema_shape(rest);
}

TEST(StructuredOutput, BadSchemasAreRefusedAtSubmit) {
  EngineOptions opt;
  opt.max_context = 512;
  Engine eng(shared().model, shared().tok, opt);
  Collector c;
  for (const char* bad : {"{not json", R"({"type":"string","pattern":"a+"})", R"({"$ref":"#/nowhere"})"}) {
    Request r = structured_request(11, 1);
    r.sampling.structured->json_schema = bad;
    EXPECT_THROW(eng.submit(r, c.callback()), Error) << bad;
  }
}

}  // namespace
}  // namespace strata::engine
