#include "models/gemma4/k_eq_v.h"

#include <cstddef>
#include <vector>

#include "core/numfmt.h"
#include "kernels/rmsnorm.h"

namespace strata::gemma4 {

void k_eq_v_rebuild(const uint16_t* r, int64_t heads, int64_t D, const uint16_t* k_norm, float eps,
                    const models::RotateHalfRope& rope, const float* cos, const float* sin, uint16_t* k, uint16_t* v) {
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
    rope.apply(kk.data(), cos, sin);
    for (int64_t i = 0; i < D; ++i) k[h * D + i] = f32_to_bf16(kk[size_t(i)]);
  }
}

}  // namespace strata::gemma4
