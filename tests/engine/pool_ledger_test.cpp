// The pool's accounting is the ledger's: a request of DeepSeek-V4 (flash-tiny, pro-tiny and
// the official Flash config) holds exactly cache_layout(...).bytes_for(n) bytes at context n,
// and its kinds add up to it.
#include <gtest/gtest.h>

#include "cache/pool.h"
#include "models/deepseek_v4/cache_layout.h"
#include "models/deepseek_v4/presets.h"

namespace strata {
namespace {

TEST(PoolLedger, RequestBytesEqualTheLedger) {
  for (const char* preset : {"flash-tiny", "pro-tiny", "flash-2l"}) {
    const auto layout = dsv4::cache_layout(dsv4::preset_config(preset));
    cache::CachePool pool(layout, 256 << 20);
    cache::PoolSeq s;
    for (int64_t n : {1, 127, 128, 129, 1000, 4096}) {
      ASSERT_TRUE(pool.reserve(s, n)) << preset << " " << n;
      EXPECT_EQ(pool.bytes_in_use(), layout.bytes_for(n)) << preset << " " << n;
      int64_t sum = 0;
      for (auto& [kind, b] : pool.bytes_by_kind()) sum += b;
      EXPECT_EQ(sum, layout.bytes_for(n));
    }
    pool.release(s);
    EXPECT_EQ(pool.bytes_in_use(), 0);
  }
}

}  // namespace
}  // namespace strata
