#include "models/layers/exact_attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/numfmt.h"

namespace strata::models {

namespace {

// A function of a bf16 value remembered for the values seen since the last clear: attention
// scores are bf16 values, so a head's exp(z − max) and its weights repeat across the keys
// (a few thousand distinct scores over 128K keys). Stamps make a clear O(1).
class Bf16Memo {
 public:
  Bf16Memo() : val_(65536), stamp_(65536, 0) {}
  void clear() {
    if (++gen_ == 0) std::fill(stamp_.begin(), stamp_.end(), 0u), gen_ = 1;
  }
  template <class F>
  double get(uint16_t key, F&& f) {
    if (stamp_[key] != gen_) val_[key] = f(), stamp_[key] = gen_;
    return val_[key];
  }

 private:
  std::vector<double> val_;
  std::vector<uint32_t> stamp_;
  uint32_t gen_ = 0;
};

}  // namespace

void attend_group(const float* q, int64_t qs, int64_t G, const uint16_t* const* keys, const uint16_t* const* values,
                  int64_t offset, int64_t n, int64_t D, float scale, const KvDots& kd, uint16_t* zb, double* acc,
                  float* o, int64_t os) {
  thread_local Bf16Memo e_memo, p_memo;
  double dots[8];
  std::vector<double> q64(static_cast<size_t>(G * D));  // widened once, not once a key
  for (int64_t g = 0; g < G; ++g)
    for (int64_t i = 0; i < D; ++i) q64[size_t(g * D + i)] = double(q[g * qs + i]);
  std::vector<double> mx(static_cast<size_t>(G), -INFINITY);
  for (int64_t j = 0; j < n; ++j) {
    const uint16_t* kj = keys[j] + offset;
    for (int64_t g0 = 0; g0 < G; g0 += 8) {
      const int64_t gn = std::min<int64_t>(8, G - g0);
      kd.dots(q64.data() + g0 * D, D, gn, kj, D, dots);
      for (int64_t g = g0; g < g0 + gn; ++g) {
        const float zj = round_bf16(round_bf16(float(dots[g - g0])) * scale);
        zb[g * n + j] = f32_to_bf16(zj);
        mx[size_t(g)] = std::max(mx[size_t(g)], double(zj));
      }
    }
  }
  // Per head: the softmax sum in key order, then each key's weight p (a bf16 value) written
  // over its score.
  for (int64_t g = 0; g < G; ++g) {
    uint16_t* z = zb + g * n;
    const double m = mx[size_t(g)];
    e_memo.clear();
    const auto e = [&](uint16_t bits) {
      return e_memo.get(bits, [&] { return std::exp(double(bf16_to_f32(bits)) - m); });
    };
    double s = 0.0;
    for (int64_t j = 0; j < n; ++j) s += e(z[j]);
    p_memo.clear();
    for (int64_t j = 0; j < n; ++j) {
      const uint16_t bits = z[j];
      z[j] = uint16_t(p_memo.get(bits, [&] { return double(f32_to_bf16(float(e(bits) / s))); }));
    }
  }
  // P·V, each value row read once for the group, in blocks of keys; each element sums in key order.
  constexpr int64_t kKeys = 64;
  std::fill(acc, acc + G * D, 0.0);
  std::vector<double> p(static_cast<size_t>(kKeys * G));
  const uint16_t* v[kKeys];
  for (int64_t j0 = 0; j0 < n; j0 += kKeys) {
    const int64_t nk = std::min(kKeys, n - j0);
    for (int64_t j = 0; j < nk; ++j) {
      v[j] = values[j0 + j] + offset;
      for (int64_t g = 0; g < G; ++g) p[size_t(j * G + g)] = double(bf16_to_f32(zb[g * n + j0 + j]));
    }
    kd.accumulate(acc, G, p.data(), v, nk, D);
  }
  for (int64_t g = 0; g < G; ++g)
    for (int64_t i = 0; i < D; ++i) o[g * os + i] = round_bf16(float(acc[g * D + i]));
}

}  // namespace strata::models
