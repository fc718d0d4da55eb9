#include <cstring>

#include "kernels/probe_impl.h"

namespace strata::kernels::scalar {

uint64_t sum_bytes(const uint8_t* p, size_t n) {
  uint64_t s = 0;
  for (size_t i = 0; i + 8 <= n; i += 64) {
    uint64_t v;
    std::memcpy(&v, p + i, 8);  // one word per cache line: the loads, not the adds, are timed
    s += v;
  }
  return s;
}

void fma_loop(uint64_t iters) {
  float a[8][64] = {};
  const float m = 1.0000001f, c = 1e-7f;
  for (uint64_t k = 0; k < iters; ++k)
    for (auto& row : a)
      for (float& x : row) x = x * m + c;
  volatile float sink = a[3][5];
  (void)sink;
}

}  // namespace strata::kernels::scalar
