// The component goldens of reference/ (tests/goldens/<arch>/components/<component>/: meta.json
// and .npy inputs and outputs) as the model tests read them, and the comparison they report.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/json_file.h"
#include "io/npy.h"
#include "kernels/linear.h"

namespace strata::testing {

struct Golden {
  std::string dir;
  nlohmann::json meta;
  std::map<std::string, NpyArray> arrays;

  Golden(const std::string& arch, const std::string& component)
      : dir(std::string(STRATA_SOURCE_DIR) + "/tests/goldens/" + arch + "/components/" + component) {}
  bool present() const { return std::filesystem::exists(dir + "/meta.json"); }
  void load() { meta = read_json_file(dir + "/meta.json"); }
  const NpyArray& a(const std::string& name) {
    auto it = arrays.find(name);
    if (it == arrays.end()) it = arrays.emplace(name, read_npy(dir + "/" + name + ".npy")).first;
    return it->second;
  }
  std::vector<float> f(const std::string& name) { return a(name).to_f32(); }
  const uint16_t* bf16(const std::string& name) { return a(name).as<uint16_t>(); }
  const float* f32p(const std::string& name) { return a(name).as<float>(); }
  kernels::LinearWeight plain(const std::string& name) {
    const NpyArray& w = a(name);
    return {kernels::WeightFormat::bf16, w.data.data(), nullptr, w.shape[0], w.shape[1]};
  }
  kernels::LinearWeight fp8(const std::string& stem) {
    const NpyArray& w = a(stem + ".weight");
    return {kernels::WeightFormat::fp8, w.data.data(), a(stem + ".scale").data.data(), w.shape[0], w.shape[1]};
  }
  kernels::LinearWeight fp4(const std::string& stem) {
    const NpyArray& w = a(stem + ".weight");
    return {kernels::WeightFormat::fp4, w.data.data(), a(stem + ".scale").data.data(), w.shape[0], w.shape[1] * 2};
  }
};

#define LOAD_OR_SKIP(g)                                                     \
  if (!(g).present()) GTEST_SKIP() << "no golden at " << (g).dir;          \
  (g).load()

struct Diff {
  double max_abs = 0, max_ref = 0;
  int64_t mismatches = 0, n = 0;
};

inline Diff diff(const float* got, const std::vector<float>& want, const char* what) {
  Diff d;
  d.n = int64_t(want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    d.max_ref = std::max(d.max_ref, double(std::fabs(want[i])));
    if (got[i] != want[i]) {
      ++d.mismatches;
      d.max_abs = std::max(d.max_abs, std::fabs(double(got[i]) - double(want[i])));
    }
  }
  std::printf("[golden] %-28s max|diff| %.3g (max|ref| %.3g), %lld/%lld elements differ\n", what, d.max_abs, d.max_ref,
              (long long)d.mismatches, (long long)d.n);
  return d;
}

}  // namespace strata::testing
