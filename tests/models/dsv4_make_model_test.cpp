// make-model presets: official layout, checkpoint check passes, same seed gives the same
// bytes at any thread count, real block quantization with varying scales, and a config that
// contradicts the tensors is reported in full before anything runs.
#include "models/deepseek_v4/make_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/error.h"
#include "core/numfmt.h"
#include "io/json_file.h"
#include "io/safetensors.h"
#include "models/deepseek_v4/presets.h"
#include "models/deepseek_v4/tensors.h"

namespace strata::dsv4 {
namespace {
namespace fs = std::filesystem;

std::string tmp(const std::string& n) {
  return (fs::temp_directory_path() / ("strata_mm_" + std::to_string(::getpid()) + "_" + n)).string();
}

std::string make(const std::string& preset, uint64_t seed, int threads, const std::string& tag) {
  MakeModelOptions o;
  o.config = preset_config(preset);
  o.seed = seed;
  o.out_dir = tmp(tag);
  o.tokenizer_dir = std::string(STRATA_SHARED_DIR) + "/tokenizers/deepseek-v3";
  o.threads = threads;
  fs::remove_all(o.out_dir);
  make_model(o);
  return o.out_dir;
}

// One read of the whole file (a character iterator is slow in the unoptimized sanitizer build).
std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::string s(size_t(fs::file_size(p)), '\0');
  f.read(s.data(), std::streamsize(s.size()));
  return s;
}

class MakeModel : public ::testing::Test {
 protected:
  static void TearDownTestSuite() {
    for (auto& d : dirs()) fs::remove_all(d);
  }
  static std::vector<std::string>& dirs() {
    static std::vector<std::string> d;
    return d;
  }
  static std::string made(const std::string& preset, uint64_t seed, int threads, const std::string& tag) {
    dirs().push_back(make(preset, seed, threads, tag));
    return dirs().back();
  }
};

TEST_F(MakeModel, TinyPresetsPassTheCheckpointCheck) {
  for (const char* preset : {"flash-tiny", "pro-tiny"}) {
    std::string dir = made(preset, 7, 0, std::string("ok_") + preset);
    Config c = load_config(dir);
    auto ckpt = SafetensorsCheckpoint::open_dir(dir);
    auto r = check_checkpoint(c, ckpt);
    EXPECT_TRUE(r.ok()) << preset << ": " << r.summary();
    EXPECT_TRUE(r.unexpected.empty());
    EXPECT_GT(ckpt.files().size(), 1u) << "small shards exercise the index";
    for (const char* f : {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"})
      EXPECT_TRUE(fs::exists(fs::path(dir) / f)) << f;
    auto cfg = read_json_file((fs::path(dir) / "config.json").string());
    EXPECT_EQ(cfg["model_type"], "deepseek_v4");
    EXPECT_EQ(cfg["vocab_size"], 129280);
  }
}

TEST_F(MakeModel, SameSeedSameBytesAtAnyThreadCount) {
  std::string a = made("flash-tiny", 3, 1, "det_a"), b = made("flash-tiny", 3, 2, "det_b"), c = made("flash-tiny", 4, 2, "det_c");
  int files = 0;
  for (auto& e : fs::directory_iterator(a)) {
    const auto n = e.path().filename();
    EXPECT_EQ(slurp(e.path()), slurp(fs::path(b) / n)) << n;
    if (n.extension() == ".safetensors") {
      EXPECT_NE(slurp(e.path()), slurp(fs::path(c) / n)) << "another seed must change " << n;
      ++files;
    }
  }
  EXPECT_GT(files, 0);
}

TEST_F(MakeModel, WeightsAreReallyQuantized) {
  std::string dir = made("flash-tiny", 11, 0, "quant");
  auto ckpt = SafetensorsCheckpoint::open_dir(dir);
  // FP8: every e4m3 code is finite, scales differ across 128x128 blocks, some block reaches
  // the top of the e4m3 range (amax maps into (224, 448]).
  auto w = ckpt.get("layers.2.attn.wq_b.weight");  // [2048, 128]
  auto s = ckpt.get("layers.2.attn.wq_b.scale");   // [16, 1]
  std::set<uint8_t> scales(s.as<uint8_t>(), s.as<uint8_t>() + s.info->numel());
  EXPECT_GT(scales.size(), 1u);
  float amax = 0;
  for (int64_t i = 0; i < w.info->numel(); ++i) {
    float v = e4m3_to_f32(w.as<uint8_t>()[i]);
    ASSERT_FALSE(std::isnan(v));
    amax = std::max(amax, std::fabs(v));
  }
  EXPECT_GT(amax, 224.0f);
  EXPECT_LE(amax, 448.0f);
  // dequantized values have the intended scale: std ~ 1/sqrt(in) times gains in [0.5, 2)
  double ss = 0;
  for (int64_t r = 0; r < 2048; ++r)
    for (int64_t col = 0; col < 128; ++col) {
      double v = e4m3_to_f32(w.as<uint8_t>()[r * 128 + col]) * e8m0_to_f32(s.as<uint8_t>()[r / 128]);
      ss += v * v;
    }
  double rms = std::sqrt(ss / (2048.0 * 128));
  EXPECT_GT(rms, 0.5 / std::sqrt(128.0));
  EXPECT_LT(rms, 2.0 / std::sqrt(128.0));
  // FP4: per-32 scales vary, nibbles use the whole e2m1 range
  auto e = ckpt.get("layers.0.ffn.experts.5.w1.weight");
  auto es = ckpt.get("layers.0.ffn.experts.5.w1.scale");
  std::set<uint8_t> fscales(es.as<uint8_t>(), es.as<uint8_t>() + es.info->numel());
  EXPECT_GT(fscales.size(), 2u);
  std::set<uint8_t> nibbles;
  for (int64_t i = 0; i < e.info->numel(); ++i) nibbles.insert(uint8_t(e.as<uint8_t>()[i] & 0xF));
  EXPECT_GE(nibbles.size(), 14u);
  // tid2eid: distinct valid experts per token
  auto t = ckpt.get("layers.1.ffn.gate.tid2eid");
  const int64_t k = t.info->shape[1];
  for (int64_t v = 0; v < 1000; ++v) {
    std::set<int64_t> ex(t.as<int64_t>() + v * k, t.as<int64_t>() + (v + 1) * k);
    ASSERT_EQ(int64_t(ex.size()), k);
    for (auto x : ex) ASSERT_TRUE(x >= 0 && x < 16);
  }
}

TEST_F(MakeModel, ContradictingConfigIsReportedInFull) {
  std::string dir = made("flash-tiny", 5, 0, "contra");
  auto ckpt = SafetensorsCheckpoint::open_dir(dir);
  Config c = load_config(dir);
  c.n_routed_experts = 32;  // experts 16..31 missing in every layer; gates mismatched
  c.num_hash_layers = 4;    // layer 3 should have tid2eid, has a bias
  auto r = check_checkpoint(c, ckpt);
  EXPECT_FALSE(r.ok());
  // 7 blocks x 16 experts x 3 linears x (weight + scale) + layer 3's tid2eid
  EXPECT_EQ(r.missing.size(), size_t(7 * 16 * 3 * 2 + 1));
  EXPECT_GE(r.mismatched.size(), 7u);  // gate.weight [16, d] vs [32, d] in each block
  bool saw_bias = false;
  for (auto& u : r.unexpected) saw_bias |= u == "layers.3.ffn.gate.bias";
  EXPECT_TRUE(saw_bias);
  try {
    require_valid_checkpoint(c, ckpt, dir);
    FAIL();
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find(dir), std::string::npos);
    EXPECT_NE(m.find("layers.0.ffn.experts.16.w1.weight"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos);
  }
}

}  // namespace
}  // namespace strata::dsv4

namespace strata::dsv4 {
namespace {

TEST_F(MakeModel, EveryTensorIsAlignedToItsElementSize) {
  std::string dir = made("pro-tiny", 2, 0, "aligned");
  auto ckpt = SafetensorsCheckpoint::open_dir(dir);
  for (const TensorInfo* t : ckpt.all()) {
    const uintptr_t addr = reinterpret_cast<uintptr_t>(ckpt.ref(*t).data);
    EXPECT_EQ(addr % uintptr_t(dtype_size(t->dtype)), 0u) << t->name << " " << dtype_name(t->dtype);
  }
}

}  // namespace
}  // namespace strata::dsv4
