// Final logit soft-capping (Gemma 2/3/4), as the bf16 execution computes it on bf16 logits:
//   y = bf16(bf16(tanh(bf16(x / cap))) · cap)
// the division an fp32 division, tanh in fp64 rounded once to fp32. A function of the bf16
// logit alone: one table of the 65536 bf16 bit patterns per cap (262,144 tanh a row otherwise).
#pragma once
#include <cstdint>
#include <vector>

namespace strata::models {

class LogitSoftcap {
 public:
  LogitSoftcap() = default;
  explicit LogitSoftcap(float cap);
  // x: n bf16 values, capped in place.
  void apply(float* x, int64_t n) const;
  // The definition, one value (the table's source; tests).
  static float of(float x, float cap);

 private:
  std::vector<float> table_;
};

}  // namespace strata::models
