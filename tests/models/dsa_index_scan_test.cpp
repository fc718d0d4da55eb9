// The lightning indexer's scan kernel: the AVX-512 version gives the scalar reference's bits on
// random keys and queries, with head counts that fill one, several or part of a 64-head pass,
// odd key counts and a window that starts past the first key; and both equal the definition
// computed term by term (the dots of e4m3 values are exact, so any order agrees).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "cache/entry_array.h"
#include "core/cpu.h"
#include "models/dsa/cache_entries.h"
#include "models/dsa/index_scan.h"

namespace strata::dsa {
namespace {

TEST(DsaIndexScan, Avx512EqualsTheReferenceAndTheDefinition) {
  std::mt19937_64 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int64_t heads : {8, 32, 64, 72, 256}) {
    const int64_t n = 37;
    cache::EntryArray keys;
    keys.init(132);
    std::vector<float> k(128);
    for (int64_t s = 0; s < n; ++s) {
      const float gain = float(1 << (s % 7));
      for (auto& v : k) v = nd(rng) * gain;
      if (s == 5) std::fill(k.begin(), k.end(), 0.0f);  // a zero key: score 0
      encode_index_key(k.data(), 128, keys.append());
    }
    std::vector<double> qT(size_t(128 * heads));
    const double* lut = e4m3_double_table();
    for (auto& v : qT) v = lut[rng() % 256 & 0x7e];  // e4m3 values, no NaN codes
    std::vector<float> w(static_cast<size_t>(heads));
    for (auto& v : w) v = nd(rng) * 1e-3f;
    std::vector<float> ref(size_t(n - 3)), fast(size_t(n - 3));
    index_scan_reference(qT.data(), w.data(), heads, keys, 3, n, ref.data());
    if (detected_isa() >= Isa::avx512) {
      avx512::index_scan(qT.data(), w.data(), heads, keys, 3, n, fast.data());
      EXPECT_EQ(std::memcmp(ref.data(), fast.data(), ref.size() * 4), 0) << heads << " heads";
    }
    for (int64_t s = 3; s < n; ++s) {  // the definition, one term at a time
      float kv[128];
      const float ks = decode_index_key(keys.entry(s), 128, kv);
      double lanes[16] = {};
      for (int64_t j = 0; j < heads; ++j) {
        double d = 0;
        for (int64_t i = 0; i < 128; ++i) d += qT[size_t(i * heads + j)] * double(kv[i]);
        lanes[j % 16] += double(std::max(0.0f, float(d)) * w[size_t(j)]);
      }
      for (int wdt = 8; wdt >= 1; wdt /= 2)
        for (int i = 0; i < wdt; ++i) lanes[i] += lanes[i + wdt];
      EXPECT_EQ(ref[size_t(s - 3)], float(lanes[0]) * ks) << heads << " heads, key " << s;
    }
  }
}

}  // namespace
}  // namespace strata::dsa
