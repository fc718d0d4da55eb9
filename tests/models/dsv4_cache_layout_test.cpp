// The cache ledger reproduces new-generation-models.txt's table (DeepSeek-V4 at FP8 storage:
// Flash ~3.8 KB per token and ~15 MB fixed per request, Pro ~5.4 KB and ~22 MB) exactly from
// the book's own byte model, and strata's FP4 index keys shrink only the indexer part.
#include "models/deepseek_v4/cache_layout.h"

#include <gtest/gtest.h>

namespace strata::dsv4 {
namespace {

const std::string kShared = STRATA_SHARED_DIR;

// The book's v4() ledger: per_token = c4*(584+idx)/4 + c128*584/128, fixed = window + state.
struct Book {
  double per_token;
  int64_t fixed;
};
Book book(int c4, int c128, int swa_only, int idx) {
  Book b;
  b.per_token = c4 * (584.0 + idx) / 4 + c128 * 584.0 / 128;
  b.fixed = int64_t(c4 + c128 + swa_only) * 128 * 584 + int64_t(c4) * 8 * (2 * 2 * 512 + 2 * 2 * 128) * 4 +
            int64_t(c128) * 128 * (2 * 512) * 4;
  return b;
}

TEST(Dsv4CacheLayout, ReproducesTheBookAtFp8) {
  CacheLayoutOptions fp8{IndexKeyFormat::fp8, false};
  auto flash = cache_layout(load_config(kShared + "/models/deepseek-v4-flash/config.json"), fp8);
  auto pro = cache_layout(load_config(kShared + "/models/deepseek-v4-pro/config.json"), fp8);
  Book bf = book(21, 20, 2, 132), bp = book(30, 31, 0, 132);
  EXPECT_DOUBLE_EQ(flash.bytes_per_token(), bf.per_token);
  EXPECT_EQ(flash.fixed_bytes(), bf.fixed);
  EXPECT_DOUBLE_EQ(pro.bytes_per_token(), bp.per_token);
  EXPECT_EQ(pro.fixed_bytes(), bp.fixed);
  // the book's rounded figures (KB = 1024 B, MB = 1024^2 B, GB = 1024^3 B)
  EXPECT_NEAR(flash.bytes_per_token() / 1024, 3.8, 0.05);
  EXPECT_NEAR(double(flash.fixed_bytes()) / (1 << 20), 15, 0.5);
  EXPECT_NEAR(pro.bytes_per_token() / 1024, 5.4, 0.05);
  EXPECT_NEAR(double(pro.fixed_bytes()) / (1 << 20), 22, 0.5);
  EXPECT_NEAR(double(flash.bytes_for(1048576)) / double(1ull << 30), 3.77, 0.005);
  EXPECT_NEAR(double(pro.bytes_for(1048576)) / double(1ull << 30), 5.40, 0.005);
  EXPECT_EQ(flash.block_tokens, 128);
}

TEST(Dsv4CacheLayout, Fp4IndexKeysAndEntrySizes) {
  Config c = load_config(kShared + "/models/deepseek-v4-flash/config.json");
  EXPECT_EQ(kv_entry_bytes(c), 584);  // 448 e4m3 + 7 e8m0 + 128 bf16 bytes = 583, aligned to 8
  EXPECT_EQ(index_key_bytes(c, IndexKeyFormat::fp4), 68);
  EXPECT_EQ(index_key_bytes(c, IndexKeyFormat::fp8), 132);
  auto fp4 = cache_layout(c, {IndexKeyFormat::fp4, false}), fp8 = cache_layout(c);
  EXPECT_DOUBLE_EQ(fp8.bytes_per_token() - fp4.bytes_per_token(), 21 * (132 - 68) / 4.0);
  EXPECT_EQ(fp8.fixed_bytes(), fp4.fixed_bytes());
  // a block of 128 tokens holds 32 CSA entries and 1 HCA entry per layer
  int64_t csa_entries = 0, hca_entries = 0;
  for (auto& s : fp4.specs)
    if (s.kind == cache::CacheKind::compressed) (s.tokens_per_entry == 4 ? csa_entries : hca_entries) += s.entries_per_block(128);
  EXPECT_EQ(csa_entries, 21 * 32);
  EXPECT_EQ(hca_entries, 20);
  // whole blocks: 1000 tokens take 8 blocks; exact counting takes floor(n/r) entries
  EXPECT_EQ(fp4.bytes_for(1000), fp4.fixed_bytes() + 8 * fp4.block_bytes());
  EXPECT_LT(fp4.bytes_exact(1000), fp4.bytes_for(1000));
  // the MTP block adds one window
  auto mtp = cache_layout(c, {IndexKeyFormat::fp4, true});
  // layer-by-layer §9.2's byte model (576-byte entries, 64-byte keys, no compressor state):
  // Pro ≈ 5.18 GB and Flash ≈ 3.62 GB at 1M tokens (decimal GB)
  CacheLayoutOptions paper{IndexKeyFormat::fp4, false, 576, 64};
  auto growing_and_window = [](const cache::CacheLayout& L, int64_t n) {
    int64_t s = 0;
    for (auto& sp : L.specs)
      if (sp.kind != cache::CacheKind::compressor_state) s += sp.bytes_exact(n);
    return s;
  };
  EXPECT_NEAR(double(growing_and_window(cache_layout(c, paper), 1048576)) / 1e9, 3.62, 0.01);
  Config pro = load_config(kShared + "/models/deepseek-v4-pro/config.json");
  EXPECT_NEAR(double(growing_and_window(cache_layout(pro, paper), 1048576)) / 1e9, 5.18, 0.01);
  EXPECT_EQ(mtp.fixed_bytes() - fp4.fixed_bytes(), 128 * 584);
}

}  // namespace
}  // namespace strata::dsv4
