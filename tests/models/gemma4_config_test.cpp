// Gemma 4's config.json and the bad ones a user may hand in, each a clear error naming the key
// or the layer before any compute: layer_types against num_hidden_layers, KV-shared layers with
// no source of their type, misspelt keys; and a checkpoint whose K=V declaration disagrees with
// its tensors (a v_proj on a K=V layer, or none where one is needed). The 12B preset's ledger is
// the source document's row.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/json_file.h"
#include "models/gemma4/config.h"
#include "models/gemma4/presets.h"
#include "models/gemma4_fixture.h"
#include "models/registry.h"

namespace strata::gemma4 {
namespace {

nlohmann::json preset_json(const std::string& p) {
  return nlohmann::json::parse(to_json(preset_config(p)).dump());
}

std::string error_of(const nlohmann::json& j) {
  try {
    parse_config(j, "config.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Gemma4Config, PresetsRoundTripThroughTheirConfigJson) {
  for (const auto& p : preset_names()) {
    const Config c = parse_config(preset_json(p), p);
    const Config want = preset_config(p);
    EXPECT_EQ(c.layer_types, want.layer_types) << p;
    EXPECT_EQ(c.sliding_window, want.sliding_window) << p;
    EXPECT_EQ(c.attention_k_eq_v, want.attention_k_eq_v) << p;
    EXPECT_EQ(c.num_global_key_value_heads, want.num_global_key_value_heads) << p;
    EXPECT_EQ(c.hidden_size_per_layer_input, want.hidden_size_per_layer_input) << p;
    EXPECT_EQ(c.num_kv_shared_layers, want.num_kv_shared_layers) << p;
    EXPECT_EQ(c.enable_moe_block, want.enable_moe_block) << p;
    EXPECT_EQ(c.full_partial_rotary_factor, 0.25) << p;
  }
}

TEST(Gemma4Config, PerLayerShapes) {
  const Config e2b = preset_config("gemma4-e2b");
  EXPECT_EQ(e2b.sliding_layers(), 28);
  EXPECT_EQ(e2b.first_kv_shared(), 15);
  EXPECT_EQ(e2b.kv_source(15), 13);  // sliding: the last sliding layer before 15
  EXPECT_EQ(e2b.kv_source(19), 14);  // full
  EXPECT_EQ(e2b.layer_intermediate(14), 6144);
  EXPECT_EQ(e2b.layer_intermediate(15), 2 * 6144);
  EXPECT_EQ(e2b.kv_entry_bytes(4), 2 * 512 * 2);  // full, K and V separate
  const Config b12 = preset_config("gemma4-12b");
  EXPECT_EQ(b12.kv_entry_bytes(5), 512 * 2);      // K=V: one 512-dim vector
  EXPECT_EQ(b12.kv_entry_bytes(0), 2 * 8 * 256 * 2);
}

// The source document's Gemma 4 12B row: 8.0 KB per token, 320 MB fixed, 1.31 GB at 128K, no 1M.
TEST(Gemma4Config, The12BLedgerIsTheSourceDocumentsRow) {
  const auto c = models::preset_model_config("gemma4-12b");
  const auto L = c->cache_layout();
  EXPECT_EQ(L.bytes_per_token(), 8192.0);
  EXPECT_EQ(L.fixed_bytes(), int64_t(320) << 20);
  EXPECT_NEAR(double(L.bytes_for(131072)) / double(int64_t(1) << 30), 1.3125, 1e-9);
  EXPECT_EQ(c->facts().max_positions, 131072);
}

TEST(Gemma4Config, LayerPatternMustMatchTheLayers) {
  nlohmann::json j = preset_json("gemma4-tiny");
  j["text_config"]["layer_types"].erase(5);
  EXPECT_NE(error_of(j).find("layer_types has 5 entries but num_hidden_layers is 6"), std::string::npos) << error_of(j);
  j = preset_json("gemma4-tiny");
  j["text_config"]["layer_types"][1] = "linear_attention";
  EXPECT_NE(error_of(j).find("layer_types[1] 'linear_attention'"), std::string::npos) << error_of(j);
  j = preset_json("gemma4-tiny");
  j["text_config"]["sliding_window"] = 0;
  EXPECT_NE(error_of(j).find("sliding_window must be positive"), std::string::npos) << error_of(j);
  // Shared layers need an earlier layer of their type: with every layer but the last sliding
  // and the last one shared, the full layer has no source.
  j = preset_json("gemma4-e-tiny");
  j["text_config"]["layer_types"] = {"sliding_attention", "sliding_attention", "sliding_attention",
                                     "sliding_attention", "sliding_attention", "full_attention"};
  j["text_config"]["num_kv_shared_layers"] = 1;
  EXPECT_NE(error_of(j).find("layer 5 (full_attention) shares K/V"), std::string::npos) << error_of(j);
}

TEST(Gemma4Config, MisspeltKeysAreErrors) {
  nlohmann::json j = preset_json("gemma4-kv-tiny");
  j["text_config"]["attention_k_eq_vv"] = true;
  EXPECT_NE(error_of(j).find("unknown key 'attention_k_eq_vv' (did you mean 'attention_k_eq_v'?)"), std::string::npos)
      << error_of(j);
  j = preset_json("gemma4-tiny");
  j["text_config"]["model_type"] = "gemma3_text";
  EXPECT_NE(error_of(j).find("is not gemma4_text"), std::string::npos);
}

// A copy of a tiny checkpoint with another config.json: the load names the layer and tensor.
std::string load_error_with(const std::string& preset, const std::function<void(nlohmann::json&)>& edit) {
  namespace fs = std::filesystem;
  (void)testing::tiny(preset);
  const std::string from = (fs::temp_directory_path() / ("strata_" + preset + "_5_" + std::to_string(::getpid()))).string();
  const std::string dir = from + "_edited";
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(from)) fs::create_symlink(e.path(), dir / e.path().filename());
  nlohmann::json j = read_json_file(from + "/config.json");
  edit(j["text_config"]);
  fs::remove(dir + "/config.json");
  std::ofstream(dir + "/config.json") << j.dump(2);
  std::string m;
  try {
    models::load_model(dir);
  } catch (const Error& e) {
    m = e.what();
  }
  fs::remove_all(dir);
  return m;
}

TEST(Gemma4Config, KEqualsVMustAgreeWithTheTensors) {
  // K=V declared, but the checkpoint's full layers have a v_proj.
  std::string m = load_error_with("gemma4-tiny", [](nlohmann::json& t) {
    t["attention_k_eq_v"] = true;
    t["num_global_key_value_heads"] = 2;
  });
  EXPECT_NE(m.find("layers.2.self_attn.v_proj.weight present (layer 2 is a K=V full layer"), std::string::npos) << m;
  // K=V not declared, but the checkpoint's full layers have none.
  m = load_error_with("gemma4-kv-tiny", [](nlohmann::json& t) {
    t["attention_k_eq_v"] = false;
    t["num_key_value_heads"] = 1;
    t["num_global_key_value_heads"] = nullptr;
  });
  EXPECT_NE(m.find("layers.2.self_attn.v_proj.weight"), std::string::npos) << m;
  EXPECT_NE(m.find("attention_k_eq_v is false"), std::string::npos) << m;
}

}  // namespace
}  // namespace strata::gemma4
