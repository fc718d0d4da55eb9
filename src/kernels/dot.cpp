#include "kernels/dot.h"

namespace strata::kernels {

namespace {
float dot_scalar(const float* a, const float* b, int64_t n) { return dot(a, b, n); }
}  // namespace

DotFn dot_fn(Isa isa) {
  switch (isa) {
    case Isa::avx512: return avx512::dot;
    case Isa::avx2: return avx2::dot;
    default: return dot_scalar;
  }
}

DotFn dot_fn() { return dot_fn(active_isa()); }

}  // namespace strata::kernels
