#include "kernels/dpbf16.h"

namespace strata::kernels {

namespace {
void dpbf16_accumulate_scalar(float* acc, const uint16_t* a, const uint16_t* b, int64_t lanes, int64_t steps) {
  dpbf16_accumulate(acc, a, b, lanes, steps);
}
}  // namespace

Dpbf16AccumulateFn dpbf16_accumulate_fn(Isa isa) {
  switch (isa) {
    case Isa::avx512: return avx512::dpbf16_accumulate;
    case Isa::avx2: return avx2::dpbf16_accumulate;
    default: return dpbf16_accumulate_scalar;
  }
}

}  // namespace strata::kernels
