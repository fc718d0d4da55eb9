// The lightning indexer's scan kernels, exact and fast: each AVX-512 version gives its scalar
// reference's bits on random keys and queries, with head counts that fill one, several or part of
// a 64-head pass (and half of a 16-head register), odd key counts and a window that starts past
// the first key; and each reference equals its definition computed term by term (exact: the dots
// of e4m3 values are exact, so any order agrees; fast: fp32 steps pair by pair, odd column first).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "cache/entry_array.h"
#include "core/cpu.h"
#include "kernels/dpbf16.h"
#include "models/dsa/cache_entries.h"
#include "models/dsa/index_scan.h"

namespace strata::dsa {
namespace {

struct ScanCase {
  int64_t heads = 0, n = 37, first = 3;
  cache::EntryArray keys;
  std::vector<double> qT;
  std::vector<uint32_t> pairs;
  std::vector<float> w;
  ScanQuery query() const { return {qT.data(), pairs.data(), w.data(), heads}; }
};

ScanCase make_case(int64_t heads, std::mt19937_64& rng) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  ScanCase c;
  c.heads = heads;
  c.keys.init(132);
  std::vector<float> k(128);
  for (int64_t s = 0; s < c.n; ++s) {
    const float gain = float(1 << (s % 7));
    for (auto& v : k) v = nd(rng) * gain;
    if (s == 5) std::fill(k.begin(), k.end(), 0.0f);  // a zero key: score 0
    encode_index_key(k.data(), 128, c.keys.append());
  }
  const int64_t stride = index_pair_stride(heads);
  c.qT.assign(size_t(128 * heads), 0.0);
  c.pairs.assign(size_t(64 * stride), 0u);
  const uint16_t* bf = e4m3_bf16_table();
  for (int64_t j = 0; j < heads; ++j)
    for (int64_t i = 0; i < 128; ++i) {
      const uint8_t code = uint8_t(rng() % 256);
      const uint8_t safe = (code & 0x7f) == 0x7f ? uint8_t(code - 1) : code;  // e4m3 values, no NaN codes
      c.qT[size_t(i * heads + j)] = e4m3_double_table()[safe];
      c.pairs[size_t(i / 2 * stride + j)] |= uint32_t(bf[safe]) << (16 * (i % 2));
    }
  c.w.resize(static_cast<size_t>(heads));
  for (auto& v : c.w) v = nd(rng) * 1e-3f;
  return c;
}

double fold(double* lanes) {
  for (int wdt = 8; wdt >= 1; wdt /= 2)
    for (int i = 0; i < wdt; ++i) lanes[i] += lanes[i + wdt];
  return lanes[0];
}

TEST(DsaIndexScan, Avx512EqualsTheReferenceAndTheDefinition) {
  std::mt19937_64 rng(7);
  for (int64_t heads : {8, 24, 32, 64, 72, 256}) {
    const ScanCase c = make_case(heads, rng);
    const int64_t m = c.n - c.first;
    std::vector<float> ref(static_cast<size_t>(m)), simd(static_cast<size_t>(m));
    index_scan_reference(c.query(), c.keys, c.first, c.n, ref.data());
    if (detected_isa() >= Isa::avx512) {
      avx512::index_scan(c.query(), c.keys, c.first, c.n, simd.data());
      EXPECT_EQ(std::memcmp(ref.data(), simd.data(), ref.size() * 4), 0) << heads << " heads";
    }
    for (int64_t s = c.first; s < c.n; ++s) {  // the definition, one term at a time
      float kv[128];
      const float ks = decode_index_key(c.keys.entry(s), 128, kv);
      double lanes[16] = {};
      for (int64_t j = 0; j < heads; ++j) {
        double d = 0;
        for (int64_t i = 0; i < 128; ++i) d += c.qT[size_t(i * heads + j)] * double(kv[i]);
        lanes[j % 16] += double(std::max(0.0f, float(d)) * c.w[size_t(j)]);
      }
      EXPECT_EQ(ref[size_t(s - c.first)], float(fold(lanes)) * ks) << heads << " heads, key " << s;
    }
  }
}

TEST(DsaIndexScan, FastAvx512EqualsItsReferenceAndTheDefinition) {
  std::mt19937_64 rng(11);
  for (int64_t heads : {8, 24, 32, 64, 72, 256}) {
    const ScanCase c = make_case(heads, rng);
    const int64_t m = c.n - c.first;
    std::vector<float> ref(static_cast<size_t>(m)), simd(static_cast<size_t>(m)), exact(static_cast<size_t>(m));
    index_scan_fast_reference(c.query(), c.keys, c.first, c.n, ref.data());
    if (detected_isa() >= Isa::avx512) {
      avx512::index_scan_fast(c.query(), c.keys, c.first, c.n, simd.data());
      EXPECT_EQ(std::memcmp(ref.data(), simd.data(), ref.size() * 4), 0) << heads << " heads";
    }
    index_scan_reference(c.query(), c.keys, c.first, c.n, exact.data());
    int differ = 0;
    for (int64_t s = c.first; s < c.n; ++s) {  // the definition: fp32 steps, odd column of a pair first
      float kv[128];
      const float ks = decode_index_key(c.keys.entry(s), 128, kv);
      double lanes[16] = {};
      for (int64_t j = 0; j < heads; ++j) {
        float acc = 0.0f;
        for (int64_t p = 0; p < 64; ++p)
          for (int64_t i : {2 * p + 1, 2 * p}) acc = float(double(acc) + c.qT[size_t(i * heads + j)] * double(kv[i]));
        lanes[j % 16] += double(std::max(0.0f, acc) * c.w[size_t(j)]);
      }
      const float want = float(fold(lanes)) * ks;
      EXPECT_EQ(ref[size_t(s - c.first)], want) << heads << " heads, key " << s;
      differ += exact[size_t(s - c.first)] != want;
    }
    EXPECT_GT(differ, 0) << "the fp32 steps round somewhere, so the fast scan is not the exact one";
  }
}

}  // namespace
}  // namespace strata::dsa
