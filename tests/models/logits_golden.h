// End-to-end logits against the reference's goldens (tests/goldens/<arch>/logits/<case>/,
// written by reference/make_logits_goldens.py and its per-architecture siblings): the checkpoint
// is rebuilt with the golden's preset + seed (make-model is deterministic), then prefill of
// ids[0..K) and one decode step per remaining id, exactly `strata logits`' contract. Every row's
// 64-bit hash of the float32 logits bytes must match: bit-exact. On a mismatch the report names
// the first differing row and the max |diff| over the stored diagnostic subset and top-10.
// Sanitizer builds check only the first rows after the prefill (decode is slow there; row r
// depends only on ids[0..K+r), so a prefix of the rows is a valid check).
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/numerics.h"
#include "io/json_file.h"
#include "io/npy.h"
#include "models/registry.h"

#if defined(__SANITIZE_ADDRESS__)
#define STRATA_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(undefined_behavior_sanitizer)
#define STRATA_TEST_SANITIZED 1
#endif
#endif
#ifndef STRATA_TEST_SANITIZED
#define STRATA_TEST_SANITIZED 0
#endif

namespace strata::testing {

// Same as reference/make_logits_goldens.py row_hash.
inline uint64_t row_hash(const float* row, int64_t n) {
  const uint64_t P = 0x100000001b3ull;
  uint64_t h = 0, pw = 1;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t w;
    std::memcpy(&w, row + i, 4);
    pw *= P;
    h += uint64_t(w) * pw;
  }
  h ^= uint64_t(n);
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}


struct TempModel {
  std::string dir;
  TempModel(const std::string& preset, uint64_t seed, const std::string& tag) {
    namespace fs = std::filesystem;
    dir = (fs::temp_directory_path() / ("strata_logits_golden_" + tag + "_" + std::to_string(::getpid()))).string();
    models::MakeModelRequest q;
    q.preset = preset;
    q.seed = seed;
    q.out_dir = dir;
    models::architecture_for_preset(preset).make_model(q);
  }
  ~TempModel() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

inline void check_logits_case(const std::string& arch, const std::string& name) {
  namespace fs = std::filesystem;
  const std::string gdir = std::string(STRATA_SOURCE_DIR) + "/tests/goldens/" + arch + "/logits/" + name;
  if (!fs::exists(gdir + "/meta.json")) GTEST_SKIP() << "no golden at " << gdir;
  const nlohmann::json meta = read_json_file(gdir + "/meta.json");
  const std::string preset = meta["preset"].get<std::string>();
  const auto ids = meta["ids"].get<std::vector<int64_t>>();
  const int64_t K = meta["prefill"].get<int64_t>();
  const auto hashes = meta["row_hashes"].get<std::vector<std::string>>();
  const int64_t stride = meta["subset_stride"].get<int64_t>(), nsub = meta["subset_count"].get<int64_t>();
  const NpyArray subset = read_npy(gdir + "/subset.npy");
  const NpyArray top_ids = read_npy(gdir + "/top_ids.npy");
  const std::vector<int64_t> tids = top_ids.to_i64();
  const std::vector<float> tvals = read_npy(gdir + "/top_vals.npy").to_f32();
  const int64_t topk = top_ids.shape[1];
  ASSERT_EQ(int64_t(hashes.size()), int64_t(ids.size()) - K + 1);

  int64_t rows = int64_t(hashes.size());
  if (STRATA_TEST_SANITIZED) rows = std::min<int64_t>(rows, 4);

  TempModel tm(preset, meta["seed"].get<uint64_t>(), name);
  auto m = models::load_model(tm.dir);
  const int64_t V = m->vocab_size();
  ASSERT_EQ(V, meta["vocab"].get<int64_t>());
  auto st = m->new_sequence();

  int64_t first_bad = -1, bad_rows = 0;
  double max_sub = 0;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<float> l = r == 0 ? m->prefill(*st, std::vector<int64_t>(ids.begin(), ids.begin() + K))
                                  : m->decode(*st, ids[size_t(K - 1 + r)]);
    ASSERT_EQ(int64_t(l.size()), V);
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", (unsigned long long)row_hash(l.data(), V));
    if (hashes[size_t(r)] == hex) continue;
    ++bad_rows;
    if (first_bad < 0) first_bad = r;
    const float* want = subset.as<float>() + r * nsub;
    for (int64_t i = 0; i < nsub; ++i) max_sub = std::max(max_sub, std::fabs(double(l[size_t(i * stride)]) - want[i]));
    for (int64_t i = 0; i < topk; ++i) {
      const int64_t id = tids[size_t(r * topk + i)];
      max_sub = std::max(max_sub, std::fabs(double(l[size_t(id)]) - tvals[size_t(r * topk + i)]));
    }
  }
  EXPECT_EQ(bad_rows, 0) << name << ": " << bad_rows << " of " << rows << " rows differ from the reference; first row "
                         << first_bad << " (position " << (K - 1 + first_bad) << "); max |diff| over the stored subset "
                         << "(" << nsub << " indices + top-" << topk << ") of the differing rows: " << max_sub;
  std::printf("[logits golden] %s: %lld rows (prefill %lld of %zu ids) checked, %lld differ\n", name.c_str(),
              (long long)rows, (long long)K, ids.size(), (long long)bad_rows);
}

// The fast profile's goldens (tests/goldens/<arch>/logits/fast/<case>/, the same cases and record,
// written with --numerics fast): the model runs under Numerics::fast, set before it loads, and
//   * every stored logit (the diagnostic subset and the top-10) within max_abs of the reference's,
//   * the mean over the rows of each row's largest stored |diff| within mean_row_max,
// tolerances derived from the spread between equally valid fp32 accumulation orders of the same
// rounding points (reference/fast_spread.py; reference/README.md §Fast profile has the numbers
// and the margin). The fast kernels implement the reference's order exactly, so the rows are
// expected bit-identical as well: the count of rows whose hash matches is reported with the
// largest and the mean difference and the rows whose argmax agrees, not required.
struct FastTolerance {
  double max_abs = 0;       // any stored logit
  double mean_row_max = 0;  // mean over the rows of the row's max |diff|
};

inline void check_fast_logits_case(const std::string& arch, const std::string& name, FastTolerance tol) {
  namespace fs = std::filesystem;
  const std::string gdir = std::string(STRATA_SOURCE_DIR) + "/tests/goldens/" + arch + "/logits/fast/" + name;
  if (!fs::exists(gdir + "/meta.json")) GTEST_SKIP() << "no golden at " << gdir;
  const nlohmann::json meta = read_json_file(gdir + "/meta.json");
  ASSERT_EQ(meta.value("numerics", std::string()), "fast") << gdir;
  const std::string preset = meta["preset"].get<std::string>();
  const auto ids = meta["ids"].get<std::vector<int64_t>>();
  const int64_t K = meta["prefill"].get<int64_t>();
  const auto hashes = meta["row_hashes"].get<std::vector<std::string>>();
  const int64_t stride = meta["subset_stride"].get<int64_t>(), nsub = meta["subset_count"].get<int64_t>();
  const NpyArray subset = read_npy(gdir + "/subset.npy");
  const NpyArray top_ids = read_npy(gdir + "/top_ids.npy");
  const std::vector<int64_t> tids = top_ids.to_i64();
  const std::vector<float> tvals = read_npy(gdir + "/top_vals.npy").to_f32();
  const int64_t topk = top_ids.shape[1];
  ASSERT_EQ(int64_t(hashes.size()), int64_t(ids.size()) - K + 1);

  int64_t rows = int64_t(hashes.size());
  if (STRATA_TEST_SANITIZED) rows = std::min<int64_t>(rows, 4);

  TempModel tm(preset, meta["seed"].get<uint64_t>(), name + "_fast");
  ScopedNumerics guard(Numerics::fast);  // before the model loads: one profile per model's life
  auto m = models::load_model(tm.dir);
  const int64_t V = m->vocab_size();
  ASSERT_EQ(V, meta["vocab"].get<int64_t>());
  auto st = m->new_sequence();

  int64_t bit_identical = 0, over = 0, first_over = -1, argmax_kept = 0;
  double max_diff = 0, sum_row_max = 0;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<float> l = r == 0 ? m->prefill(*st, std::vector<int64_t>(ids.begin(), ids.begin() + K))
                                  : m->decode(*st, ids[size_t(K - 1 + r)]);
    ASSERT_EQ(int64_t(l.size()), V);
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", (unsigned long long)row_hash(l.data(), V));
    bit_identical += hashes[size_t(r)] == hex;
    double row_diff = 0;
    const float* sub = subset.as<float>() + r * nsub;
    for (int64_t i = 0; i < nsub; ++i) row_diff = std::max(row_diff, std::fabs(double(l[size_t(i * stride)]) - sub[i]));
    for (int64_t i = 0; i < topk; ++i)
      row_diff = std::max(row_diff, std::fabs(double(l[size_t(tids[size_t(r * topk + i)])]) - tvals[size_t(r * topk + i)]));
    max_diff = std::max(max_diff, row_diff);
    sum_row_max += row_diff;
    argmax_kept += int64_t(std::max_element(l.begin(), l.end()) - l.begin()) == tids[size_t(r * topk)];
    if (row_diff > tol.max_abs) {
      if (first_over < 0) first_over = r;
      ++over;
    }
  }
  const double mean_row_max = sum_row_max / double(std::max<int64_t>(rows, 1));
  EXPECT_EQ(over, 0) << name << " (fast): " << over << " of " << rows << " rows have a stored logit further than "
                     << tol.max_abs << " from the reference's; first row " << first_over << " (position "
                     << (K - 1 + first_over) << "); max |diff| " << max_diff;
  EXPECT_LE(mean_row_max, tol.mean_row_max) << name << " (fast): the rows' max |diff| average " << mean_row_max;
  // The tolerances bound any implementation of the profile's rounding points; the engine runs the
  // reference's own order (kernels/fast_linear.h), so on every ISA each row is the same bits.
  EXPECT_EQ(bit_identical, rows) << name << " (fast): rows whose hash differs from the reference's";
  std::printf("[logits golden fast] %s: %lld rows, max |diff| %.4g (tolerance %.3g), mean of the rows' max %.4g "
              "(tolerance %.3g); %lld rows bit-identical, argmax kept in %lld\n",
              name.c_str(), (long long)rows, max_diff, tol.max_abs, mean_row_max, tol.mean_row_max,
              (long long)bit_identical, (long long)argmax_kept);
}

}  // namespace strata::testing
