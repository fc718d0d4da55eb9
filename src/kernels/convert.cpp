#include "kernels/convert.h"

namespace strata::kernels {

const ConvertOps& convert_ops(Isa isa) {
  switch (isa) {
    case Isa::avx512: return avx512::kConvert;
    case Isa::avx2: return avx2::kConvert;
    default: return scalar::kConvert;
  }
}

}  // namespace strata::kernels
