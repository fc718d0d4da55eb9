// Qwen3.5's config.json as published, and the bad ones a user may hand in: each a clear error
// before any compute (layer_types against num_hidden_layers, unknown layer kinds, misspelt keys,
// a checkpoint whose shapes disagree with its config).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/json_file.h"
#include "models/qwen3_5/config.h"
#include "models/qwen3_5/model.h"
#include "models/qwen3_5_fixture.h"

namespace strata::qwen35 {
namespace {

const std::string kOfficial = std::string(STRATA_SHARED_DIR) + "/models/qwen3.5-0.8b/config.json";

std::string error_of(const nlohmann::json& j) {
  try {
    parse_config(j, "config.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Qwen35Config, ThePublishedConfig) {
  const Config c = parse_config(read_json_file(kOfficial), kOfficial);
  EXPECT_EQ(c.num_hidden_layers, 24);
  EXPECT_EQ(c.linear_layers(), 18);
  EXPECT_EQ(c.vocab_size, 248320);
  EXPECT_EQ(c.head_dim, 256);
  EXPECT_EQ(c.rotary_dim(), 64);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.mtp_num_hidden_layers, 1);
  EXPECT_TRUE(c.is_linear(0));
  EXPECT_FALSE(c.is_linear(3));
}

TEST(Qwen35Config, LayerTypesMustMatchTheLayers) {
  nlohmann::json j = read_json_file(kOfficial);
  j["text_config"]["layer_types"].erase(j["text_config"]["layer_types"].size() - 1);
  EXPECT_NE(error_of(j).find("layer_types has 23 entries but num_hidden_layers is 24"), std::string::npos) << error_of(j);
  j = read_json_file(kOfficial);
  j["text_config"]["layer_types"][5] = "sliding_attention";
  EXPECT_NE(error_of(j).find("'sliding_attention' is neither"), std::string::npos) << error_of(j);
}

TEST(Qwen35Config, MisspeltKeysAreErrors) {
  nlohmann::json j = read_json_file(kOfficial);
  j["text_config"]["linear_num_value_head"] = 32;
  EXPECT_NE(error_of(j).find("unknown key 'linear_num_value_head' (did you mean 'linear_num_value_heads'?)"),
            std::string::npos)
      << error_of(j);
  j = read_json_file(kOfficial);
  j["text_config"]["rms_norm_epsilon"] = 1e-5;  // far from every known key: an extra, ignored
  j["text_config"]["some_tool_extra"] = true;
  EXPECT_EQ(error_of(j), "");
  j["text_config"]["model_type"] = "qwen3_next";
  EXPECT_NE(error_of(j).find("is not qwen3_5_text"), std::string::npos);
}

TEST(Qwen35Config, ShapesThatDisagreeWithTheTensorsFailAtLoad) {
  namespace fs = std::filesystem;
  const std::string from = testing::tiny().dir, dir = from + "_wrong_shapes";
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(from)) fs::create_symlink(e.path(), dir / e.path().filename());
  nlohmann::json j = read_json_file(from + "/config.json");
  nlohmann::json& t = j.contains("text_config") ? j["text_config"] : j;
  t["intermediate_size"] = t["intermediate_size"].get<int64_t>() + 16;
  fs::remove(dir + "/config.json");
  std::ofstream(dir + "/config.json") << j.dump(2);
  try {
    Model::load(dir);
    ADD_FAILURE() << "loaded";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("checkpoint does not match config.json"), std::string::npos) << m;
    EXPECT_NE(m.find("mlp.gate_proj.weight"), std::string::npos) << m;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace strata::qwen35
