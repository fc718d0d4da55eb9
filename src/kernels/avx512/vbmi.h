// Whether this CPU has AVX512-VBMI. The avx512 level (core/cpu.h) does not require it; the
// kernels that use it (the FP4 integer route, the FP8 VBMI GEMV) check here and keep a path
// without it.
#pragma once

namespace strata::kernels::avx512 {

inline bool has_vbmi() {
  static const bool vbmi = __builtin_cpu_supports("avx512vbmi");
  return vbmi;
}

}  // namespace strata::kernels::avx512
