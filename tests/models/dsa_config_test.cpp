// The DSA family's configs: DeepSeek-V3.2's published config.json and its ledger row from the
// source document (656 + 132 B per token per layer, 46.9 KB per token, 5.87 GB at 128K, no 1M),
// GLM-5's indexer schedules, the presets, and the bad configs and checkpoints a user may hand in.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/json_file.h"
#include "io/safetensors.h"
#include "io/safetensors_writer.h"
#include "models/dsa/arch_config.h"
#include "models/dsa/config.h"
#include "models/dsa/presets.h"
#include "models/dsa/tensors.h"
#include "models/registry.h"

namespace strata::dsa {
namespace {

const std::string kOfficial = std::string(STRATA_SHARED_DIR) + "/models/deepseek-v3.2/config.json";

std::string error_of(const nlohmann::json& j) {
  try {
    parse_config(j, "config.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_ERROR(j, text) EXPECT_NE(error_of(j).find(text), std::string::npos) << error_of(j)

TEST(DsaConfig, ThePublishedDeepSeekV32Config) {
  const Config c = parse_config(read_json_file(kOfficial), kOfficial);
  EXPECT_EQ(c.model_type, "deepseek_v32");
  EXPECT_EQ(c.num_hidden_layers, 61);
  EXPECT_EQ(c.num_nextn_predict_layers, 1);
  EXPECT_EQ(c.index_topk, 2048);
  EXPECT_EQ(c.index_n_heads, 64);
  EXPECT_FALSE(c.indexer_rope_interleave);  // the 2025-11-18 fix: half-split
  EXPECT_EQ(c.full_indexer_layers(), 61);
  EXPECT_TRUE(c.fp8);
  EXPECT_TRUE(c.yarn.on);
  EXPECT_EQ(c.yarn.factor, 40);
  EXPECT_EQ(c.n_group, 8);
  EXPECT_TRUE(c.dense(2));
  EXPECT_FALSE(c.dense(3));
  EXPECT_FALSE(c.dense(61));  // the MTP layer is MoE
  EXPECT_TRUE(c.full_indexer(61));
  // 192^-1/2 · (0.1 ln 40 + 1)^2
  EXPECT_NEAR(c.softmax_scale(), 0.13523, 1e-5);
  EXPECT_TRUE(c.keys.unknown().empty());
}

TEST(DsaConfig, TheSourceDocumentsLedgerRow) {
  const auto cfg = models::load_config(kOfficial);
  const cache::CacheLayout L = cfg->cache_layout({});
  EXPECT_EQ(L.specs.size(), 2u * 61);
  for (const auto& s : L.specs)
    EXPECT_EQ(s.entry_bytes, s.kind == cache::CacheKind::mla_latent ? 656 : 132) << s.format;
  EXPECT_DOUBLE_EQ(L.bytes_per_token(), 61.0 * (656 + 132));
  EXPECT_NEAR(L.bytes_per_token() / 1024, 46.9, 0.05);
  EXPECT_NEAR(double(L.bytes_exact(131072)) / double(1ull << 30), 5.87, 0.005);
  EXPECT_EQ(L.fixed_bytes(), 0);
  EXPECT_EQ(cfg->facts().max_positions, 163840);  // no 1M request
  // With the MTP layer: one more layer of both.
  EXPECT_DOUBLE_EQ(cfg->cache_layout({.include_mtp = true}).bytes_per_token(), 62.0 * (656 + 132));
}

TEST(DsaConfig, Glm5PresetAndItsLedger) {
  const auto cfg = models::preset_model_config("glm5");
  EXPECT_EQ(cfg->facts().model_type, "glm_moe_dsa");
  EXPECT_EQ(cfg->facts().layers, 78);
  EXPECT_EQ(cfg->facts().max_positions, 202752);
  EXPECT_DOUBLE_EQ(cfg->cache_layout({}).bytes_per_token(), 78.0 * (656 + 132));
  const auto* a = dynamic_cast<const ArchConfig*>(cfg.get());
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(a->config().indexer_rope_interleave);
  EXPECT_EQ(a->config().qk_head_dim(), 256);
  EXPECT_NEAR(a->config().softmax_scale(), 1.0 / 16, 1e-12);  // no YaRN
}

TEST(DsaConfig, GlmIndexerSchedules) {
  nlohmann::json j = models::preset_model_config("glm5")->describe();  // smoke: describe runs
  EXPECT_EQ(j["schedule"]["indexer_full_layers"], 78);
  nlohmann::json g = to_json(preset_config("glm5"));
  g.erase("indexer_types");
  // GLM-5.2's freq 4, offset 3: full layers 0, 1, 2, 6, 10, ..., 74 (21 of 78).
  g["index_topk_freq"] = 4;
  g["index_skip_topk_offset"] = 3;
  Config c = parse_config(g, "config.json");
  EXPECT_EQ(c.full_indexer_layers(), 21);
  for (int64_t l : {0, 1, 2, 6, 10, 74}) EXPECT_TRUE(c.full_indexer(l)) << l;
  for (int64_t l : {3, 4, 5, 7, 75, 77}) EXPECT_FALSE(c.full_indexer(l)) << l;
  // A pattern overrides the schedule.
  g["index_topk_pattern"] = "F" + std::string(77, 'S');
  c = parse_config(g, "config.json");
  EXPECT_EQ(c.full_indexer_layers(), 1);
  g["index_topk_pattern"] = "SF" + std::string(76, 'S');
  EXPECT_ERROR(g, "layer 0 must run its own indexer");
  g["index_topk_pattern"] = "FX" + std::string(76, 'S');
  EXPECT_ERROR(g, "index_topk_pattern holds 'X'");
  g.erase("index_topk_pattern");
  g["indexer_types"] = {"full", "shared"};
  EXPECT_ERROR(g, "indexer_types has 2 entries but num_hidden_layers is 78");
}

TEST(DsaConfig, BadConfigsAreClearErrors) {
  const nlohmann::json base = read_json_file(kOfficial);
  nlohmann::json j = base;
  j.erase("index_topk");
  EXPECT_ERROR(j, "missing key 'index_topk'");
  j = base;
  j["index_topk"] = 0;
  EXPECT_ERROR(j, "index_topk must be positive");
  j = base;
  j["index_head_dim"] = 96;
  EXPECT_ERROR(j, "index_head_dim must be 128");
  j = base;
  j["kv_lora_rank"] = 500;
  EXPECT_ERROR(j, "kv_lora_rank must be a multiple of 128");
  j = base;
  j["index_topks"] = 2048;
  EXPECT_ERROR(j, "unknown key 'index_topks' (did you mean 'index_topk'?)");
  j = base;
  j["num_key_value_heads"] = 1;
  EXPECT_ERROR(j, "num_key_value_heads must equal num_attention_heads");
  j = base;
  j["scoring_func"] = "softmax";
  EXPECT_ERROR(j, "scoring_func 'softmax'");
  j = base;
  j["quantization_config"]["weight_block_size"] = {64, 64};
  EXPECT_ERROR(j, "weight_block_size must be [128, 128]");
  j = base;
  j["quantization_config"].erase("scale_fmt");
  EXPECT_ERROR(j, "only ue8m0");
  j = base;
  j["rope_scaling"]["mscale"] = 0.707;
  EXPECT_ERROR(j, "mscale != mscale_all_dim");
  j = base;
  j["topk_group"] = 9;
  EXPECT_ERROR(j, "topk_group exceeds n_group");
  j = base;
  j["model_type"] = "deepseek_v3";
  EXPECT_ERROR(j, "is not deepseek_v32 or glm_moe_dsa");
}

TEST(DsaConfig, PresetsRoundTripThroughConfigJson) {
  for (const auto& name : preset_names()) {
    const Config c = preset_config(name);
    const Config back = parse_config(to_json(c), name);
    EXPECT_EQ(back.indexer_types, c.indexer_types) << name;
    EXPECT_EQ(back.fp8, c.fp8) << name;
    EXPECT_EQ(back.yarn.on, c.yarn.on) << name;
    EXPECT_EQ(back.indexer_rope_interleave, c.indexer_rope_interleave) << name;
    EXPECT_DOUBLE_EQ(back.softmax_scale(), c.softmax_scale()) << name;
    EXPECT_EQ(expected_tensors(back).size(), expected_tensors(c).size()) << name;
  }
  // The full models are configs only.
  models::MakeModelRequest q;
  q.preset = "deepseek-v3.2";
  q.out_dir = "/nonexistent";
  try {
    models::architecture_for_preset(q.preset).make_model(q);
    FAIL() << "make-model wrote the full model";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("deepseek-v3.2-tiny or deepseek-v3.2-2l"), std::string::npos) << e.what();
  }
}

struct TempDir {
  std::string dir;
  explicit TempDir(const std::string& tag) {
    dir = (std::filesystem::temp_directory_path() / ("strata_dsa_" + tag + "_" + std::to_string(::getpid()))).string();
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

TEST(DsaConfig, TinyCheckpointsCheckAndWrongShapesAreReported) {
  for (const char* preset : {"deepseek-v3.2-tiny", "glm5-tiny"}) {
    TempDir t(preset);
    models::MakeModelRequest q;
    q.preset = preset;
    q.seed = 7;
    q.out_dir = t.dir;
    models::architecture_for_preset(preset).make_model(q);
    const auto ckpt = SafetensorsCheckpoint::open_dir(t.dir);
    Config c = parse_config(read_json_file(t.dir + "/config.json"), preset);
    EXPECT_TRUE(check_checkpoint(c, ckpt).ok()) << check_checkpoint(c, ckpt).summary();
    // GLM-5's shared layers have no indexer tensors; DeepSeek-V3.2 has one per layer.
    EXPECT_EQ(ckpt.find("model.layers.1.self_attn.indexer.wk.weight") != nullptr, !c.glm()) << preset;
    // The MTP layer's own indexer.
    EXPECT_NE(ckpt.find("model.layers." + std::to_string(c.num_hidden_layers) + ".self_attn.indexer.wq_b.weight"),
              nullptr);
    // Mismatched indexer shapes: a config with more indexer heads than the tensors hold.
    c.index_n_heads *= 2;
    const models::CheckReport r = check_checkpoint(c, ckpt);
    ASSERT_FALSE(r.ok());
    ASSERT_FALSE(r.mismatched.empty());
    EXPECT_NE(r.mismatched[0].find("indexer.wq_b.weight: found"), std::string::npos) << r.summary();
  }
}

TEST(DsaConfig, BlockScalesMustBePowersOfTwo) {
  TempDir t("scales");
  std::filesystem::create_directories(t.dir);
  // A one-layer checkpoint is too much to forge; check the scale scan on one tensor pair.
  Config c = preset_config("deepseek-v3.2-tiny");
  {
    SafetensorsWriter w(t.dir + "/model.safetensors");
    w.add("model.layers.0.self_attn.q_a_proj.weight_scale_inv", DType::F32, {1, 2}, [](uint8_t* d, uint64_t) {
      const float v[2] = {0.5f, 0.3f};
      std::memcpy(d, v, 8);
    });
    w.write();
  }
  const auto r = check_checkpoint(c, SafetensorsCheckpoint::open_dir(t.dir));
  ASSERT_EQ(r.mismatched.size(), 1u);
  EXPECT_EQ(r.mismatched[0], "model.layers.0.self_attn.q_a_proj.weight_scale_inv: block scale 1 is not a positive power of two (scale_fmt ue8m0)");
}

}  // namespace
}  // namespace strata::dsa
