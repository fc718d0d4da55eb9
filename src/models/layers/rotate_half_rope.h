// Rotate-half (NeoX) RoPE on the first `rotary_dim` dims of a head (Qwen3.5: 64 of 256), pairs
// (i, i + r/2), as transformers computes it for text positions in bf16:
//   inv[i] = fp32(1 / fp32(θ^fp32(2i / r)))     (pow in fp64, rounded once)
//   angle  = fp32(pos · inv[i]);  c, s = bf16(cos / sin of the angle, fp64 rounded once)
//   x'[i]       = bf16(bf16(x[i] c) + bf16(−x[i+r/2] s))
//   x'[i + r/2] = bf16(bf16(x[i+r/2] c) + bf16(x[i] s))
// dims ≥ r unchanged. MRoPE's three position rows are equal for text, so it reduces to this.
// Proportional RoPE (Gemma 4's full layers) is this over the whole head with only the first
// `rotated_angles` frequencies kept (the others 0: cos 1, sin 0), their exponent still 2i / r.
#pragma once
#include <cstdint>
#include <vector>

namespace strata::models {

class RotateHalfRope {
 public:
  RotateHalfRope() = default;
  RotateHalfRope(int64_t rotary_dim, double theta);
  RotateHalfRope(int64_t rotary_dim, double theta, int64_t rotated_angles);
  int64_t rotary_dim() const { return dim_; }
  const std::vector<float>& inv_freq() const { return inv_; }
  // The bf16 cos / sin of the r/2 angles at pos.
  void cos_sin(int64_t pos, float* cos, float* sin) const;
  // Rotates the first rotary_dim values of x (one head) at pos.
  void apply(float* x, int64_t pos) const;
  // The same with the angles' cos / sin already taken (one position, several heads).
  void apply(float* x, const float* cos, const float* sin) const;

 private:
  int64_t dim_ = 0;
  std::vector<float> inv_;
};

}  // namespace strata::models
