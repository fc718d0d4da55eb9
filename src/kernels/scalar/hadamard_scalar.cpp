#include <cmath>

#include "core/error.h"
#include "core/numfmt.h"
#include "kernels/hadamard.h"

namespace strata::kernels {

void hadamard(float* x, int64_t n, bool rb) {
  if (n <= 0 || (n & (n - 1))) throw Error("hadamard: length " + std::to_string(n) + " is not a power of two");
  for (int64_t h = 1; h < n; h *= 2)
    for (int64_t i = 0; i < n; i += 2 * h)
      for (int64_t j = i; j < i + h; ++j) {
        const float a = x[j], b = x[j + h];
        x[j] = a + b;
        x[j + h] = a - b;
      }
  const float s = float(std::pow(double(n), -0.5));
  for (int64_t i = 0; i < n; ++i) x[i] = rb ? round_bf16(x[i] * s) : x[i] * s;
}

}  // namespace strata::kernels
