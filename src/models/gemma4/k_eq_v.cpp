#include "models/gemma4/k_eq_v.h"

#include <cstddef>
#include <vector>

#include "core/numfmt.h"
#include "kernels/rmsnorm.h"

namespace strata::gemma4 {

void k_eq_v_rebuild(const uint16_t* r, int64_t heads, int64_t D, const uint16_t* k_norm, float eps,
                    const float* cos_sin, int64_t angles, uint16_t* k, uint16_t* v) {
  const float* cos = cos_sin;
  const float* sin = cos_sin + angles;
  const int64_t half = D / 2;
  thread_local std::vector<float> x, kk;
  x.resize(size_t(D)), kk.resize(size_t(D));
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t i = 0; i < D; ++i) x[size_t(i)] = bf16_to_f32(r[h * D + i]);
    const float s = kernels::rms_scale(x.data(), D, eps);
    for (int64_t i = 0; i < D; ++i) {
      const float t = x[size_t(i)] * s;
      v[h * D + i] = f32_to_bf16(t);
      kk[size_t(i)] = round_bf16(t * bf16_to_f32(k_norm[i]));
    }
    for (int64_t i = 0; i < angles; ++i) {  // RotateHalfRope::apply on the rotating pairs
      const float a = kk[size_t(i)], b = kk[size_t(i + half)];
      kk[size_t(i)] = round_bf16(round_bf16(a * cos[i]) + round_bf16(-b * sin[i]));
      kk[size_t(i + half)] = round_bf16(round_bf16(b * cos[i]) + round_bf16(a * sin[i]));
    }
    for (int64_t i = 0; i < D; ++i) k[h * D + i] = f32_to_bf16(kk[size_t(i)]);
  }
}

}  // namespace strata::gemma4
