// Interleaved rotary embedding with DeepSeek's YaRN frequency table. Dimension pairs
// (2k, 2k+1) rotate by pos·f_k. Compressed layers (ratio > 0) use compress_rope_theta with
// YaRN (frequencies blended between f and f/factor by a ramp over the correction range; no
// mscale); window-only layers use rope_theta unchanged. Angles are fp32 (float(pos) · f_k),
// as torch.outer builds them; the rotated values are rounded to bf16 because every tensor the
// reference rotates is bf16.
#pragma once
#include <cstdint>
#include <vector>

namespace strata::kernels {

struct YarnParams {
  double factor = 1.0;
  int64_t original_max_position = 0;  // 0 disables YaRN
  double beta_fast = 32.0;
  double beta_slow = 1.0;
};

class RopeTable {
 public:
  RopeTable() = default;
  RopeTable(int64_t rope_dim, double theta, const YarnParams& yarn);

  int64_t dim() const { return dim_; }
  const std::vector<float>& freqs() const { return freqs_; }
  // cos/sin of the dim/2 angles at position pos.
  void angles(int64_t pos, float* cos_out, float* sin_out) const;
  // Rotates x[0..dim) in place at pos (inverse: by -angle), output rounded to bf16.
  void apply(float* x, int64_t pos, bool inverse = false) const;

 private:
  int64_t dim_ = 0;
  std::vector<float> freqs_;
};

// Rotates pairs of x by (cos, sin), or by their conjugate when inverse; rounds to bf16.
void rope_rotate(float* x, const float* cos, const float* sin, int64_t pairs, bool inverse);

}  // namespace strata::kernels
