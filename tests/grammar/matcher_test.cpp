#include "grammar/matcher.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "grammar/json_schema.h"
#include "text/tokenizer.h"

namespace strata::grammar {
namespace {

using json = nlohmann::ordered_json;

// A vocabulary like a byte-level BPE's: every byte, JSON's common pieces, and random strings.
std::shared_ptr<const VocabIndex> synthetic_vocab(uint32_t seed) {
  std::vector<std::optional<std::string>> v;
  for (int b = 0; b < 256; ++b) v.push_back(std::string(1, char(b)));
  for (const char* t : {"{\"", "\":", "\": ", "\",", "\", \"", "\"}", "}", " {", "{\n", "\n ", "\n  \"", "  ",
                        "true", "false", "null", "nu", "ll", "12", "0.", "e+", "-1", "\\u00", "\\n", "red", "re",
                        "ed", "green", "\"red\"", "name", "\"name\"", "Ada", "],", "[{", "}]", "},", "\xc3\xa9",
                        "\xc3", "\xa9\"", "\xe2\x82", "\xac", "caf\xc3\xa9"})
    v.push_back(std::string(t));
  std::mt19937 rng(seed);
  const std::string alphabet = "{}[]\":, \nabcdefnrtul0123456789.-+eE\\";
  for (int i = 0; i < 3000; ++i) {
    std::string s;
    const int n = 1 + int(rng() % 6);
    for (int k = 0; k < n; ++k) s += alphabet[rng() % alphabet.size()];
    v.push_back(s);
  }
  v.push_back(std::nullopt);  // a special token: never allowed by the grammar
  v.push_back(std::string(v[300].value()));  // a duplicate string under another id
  return std::make_shared<VocabIndex>(std::move(v));
}

// Walks the state token by token; at each step the trie walk's mask must equal the mask made by
// advancing the state over every token separately.
void check_masks_against_brute_force(const std::shared_ptr<const CompiledGrammar>& cg, int steps, uint32_t seed) {
  std::mt19937 rng(seed);
  StackSet s = cg->initial();
  const VocabIndex& vocab = cg->vocab();
  for (int step = 0; step < steps; ++step) {
    const auto m = cg->mask(s);
    std::vector<int32_t> allowed;
    for (int32_t id = 0; id < vocab.size(); ++id) {
      StackSet t = s;
      const bool ok = vocab.bytes(id).has_value() && cg->advance(t, *vocab.bytes(id));
      ASSERT_EQ(m->allows(id), ok) << "step " << step << " token " << id << " '" << vocab.bytes(id).value_or("")
                                   << "'";
      if (ok) allowed.push_back(id);
    }
    ASSERT_EQ(m->complete, !s.empty() && s.front().empty());
    if (allowed.empty()) break;
    ASSERT_TRUE(cg->advance(s, *vocab.bytes(allowed[rng() % allowed.size()])));
  }
}

TEST(GrammarMatcher, MaskEqualsBruteForceOnSchemas) {
  const auto vocab = synthetic_vocab(1);
  const char* schemas[] = {
      R"({"type":"object","properties":{"name":{"type":"string","maxLength":6},"age":{"type":"integer"},
         "color":{"enum":["red","green"]},"ok":{"type":"boolean"}},"required":["name","color"]})",
      R"({"type":"array","items":{"anyOf":[{"type":"number"},{"type":"null"},{"type":"string","maxLength":3}]},"maxItems":4})",
      R"({"type":"object"})",
  };
  uint32_t seed = 7;
  for (const char* sc : schemas) {
    auto cg = std::make_shared<CompiledGrammar>(grammar_from_json_schema(json::parse(sc)), vocab);
    for (int run = 0; run < 3; ++run) check_masks_against_brute_force(cg, 40, seed++);
  }
}

TEST(GrammarMatcher, ApplyMasksLogitsAndAllowsEosOnlyWhenComplete) {
  const auto vocab = synthetic_vocab(2);
  auto cg = std::make_shared<CompiledGrammar>(
      grammar_from_json_schema(json::parse(R"({"enum":["red","green"]})")), vocab);
  Matcher m(cg);
  const int32_t eos = vocab->size() - 2;  // the nullopt id
  const std::vector<int32_t> eos_ids{eos};
  std::vector<float> logits(size_t(vocab->size()) + 5, 1.5f);  // rows past the vocabulary too
  m.apply(logits, eos_ids);
  const float ninf = -std::numeric_limits<float>::infinity();
  int allowed = 0;
  for (size_t i = 0; i < logits.size(); ++i)
    if (logits[i] != ninf) {
      ++allowed;
      EXPECT_EQ(vocab->bytes(int32_t(i)).value_or("")[0], '"') << i;
      EXPECT_EQ(logits[i], 1.5f);
    }
  EXPECT_GT(allowed, 0);
  EXPECT_EQ(logits[size_t(eos)], ninf);
  for (const char* piece : {"\"", "re", "d", "\""}) {
    int32_t id = -1;
    for (int32_t t = 0; t < vocab->size() && id < 0; ++t)
      if (vocab->bytes(t) == std::string(piece)) id = t;
    ASSERT_GE(id, 0);
    m.accept(id, eos_ids);
  }
  EXPECT_TRUE(m.complete());
  std::fill(logits.begin(), logits.end(), 2.0f);
  logits[size_t(eos)] = 0.25f;
  m.apply(logits, eos_ids);
  for (size_t i = 0; i < logits.size(); ++i) EXPECT_EQ(logits[i], i == size_t(eos) ? 0.25f : ninf) << i;
  m.accept(eos, eos_ids);  // EOS after completion is fine
  EXPECT_THROW(m.accept(0, eos_ids), Error);
}

TEST(GrammarMatcher, StartsAfterTheGivenTokenAndRestoresItsState) {
  const auto vocab = synthetic_vocab(3);
  auto cg = std::make_shared<CompiledGrammar>(json_object_grammar(), vocab);
  const int32_t end_think = 5;
  Matcher m(cg, end_think);
  std::vector<float> logits(size_t(vocab->size()), 0.0f);
  m.apply(logits, {});
  for (float x : logits) ASSERT_EQ(x, 0.0f);  // unconstrained while reasoning
  m.accept(int32_t('x'), {});
  EXPECT_FALSE(m.active());
  m.accept(end_think, {});
  EXPECT_TRUE(m.active());
  m.accept(int32_t('{'), {});
  Matcher copy(cg, end_think);
  copy.restore_state(m.state_json());
  EXPECT_EQ(copy.state_json(), m.state_json());
  EXPECT_THROW(copy.accept(int32_t('{'), {}), Error);  // '{' right after '{' is not JSON
  copy.accept(int32_t('}'), {});
  EXPECT_TRUE(copy.complete());
  nlohmann::json bad = m.state_json();
  bad["stacks"] = nlohmann::json::array({nlohmann::json::array({1u << 30})});
  EXPECT_THROW(copy.restore_state(bad), Error);
}

// On a real tokenizer's vocabulary: random walks through the mask always end in a text that
// parses as JSON and has the schema's shape.
TEST(GrammarMatcher, RealVocabularyWalksEndInValidJson) {
  const Tokenizer tok = Tokenizer::load("../shared/tokenizers/deepseek-v3");
  const auto vocab = VocabIndex::from_tokenizer(tok);
  const json schema = json::parse(R"({"type":"object","properties":{
      "city":{"type":"string","maxLength":12},"n":{"type":"integer"},
      "tags":{"type":"array","items":{"enum":["a","b","c"]},"maxItems":3},
      "ok":{"type":"boolean"}},"required":["city","n","tags"]})");
  auto cg = std::make_shared<CompiledGrammar>(grammar_from_json_schema(schema), vocab);
  std::mt19937 rng(11);
  for (int run = 0; run < 20; ++run) {
    Matcher m(cg);
    std::string text;
    for (int step = 0; step < 400 && !m.complete(); ++step) {
      std::vector<float> logits(size_t(vocab->size()), 0.0f);
      m.apply(logits, {});
      std::vector<int32_t> ok;
      for (size_t i = 0; i < logits.size(); ++i)
        if (logits[i] == 0.0f) ok.push_back(int32_t(i));
      ASSERT_FALSE(ok.empty());
      const int32_t t = ok[rng() % ok.size()];
      m.accept(t, {});
      text += *vocab->bytes(t);
    }
    ASSERT_TRUE(m.complete()) << text;
    const json j = json::parse(text);
    EXPECT_TRUE(j.at("city").is_string());
    EXPECT_TRUE(j.at("n").is_number_integer());
    EXPECT_LE(j.at("tags").size(), 3u);
  }
  const auto st = cg->stats();
  EXPECT_GT(st.hits, 0);
}

}  // namespace
}  // namespace strata::grammar
