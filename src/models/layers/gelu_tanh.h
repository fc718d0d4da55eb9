// GELU with the tanh approximation (gelu_pytorch_tanh, Gemma's GeGLU) in fp64, rounded once to
// fp32 (the project's rule for transcendental functions), in torch's order of operations:
//   inner = β·(x + κ·x³),  0.5·x·(1 + tanh(inner)),  β = √2 · (2/√π) · 0.5,  κ = 0.044715
// Its inputs are bf16 values (a linear's output), so bf16(gelu(x)) is one lookup in a table of
// all 65536 bf16 bit patterns: the same bits as computing it, without a tanh per element.
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/numfmt.h"

namespace strata::models {

inline float gelu_tanh(float x) {
  constexpr double kBeta = 1.41421356237309504880 * 1.12837916709551257390 * 0.5;
  constexpr double kKappa = 0.044715;
  const double d = x;
  const double cube = d * d * d;
  const double inner = kBeta * (d + kKappa * cube);
  return float(0.5 * d * (1.0 + std::tanh(inner)));
}

// bf16(gelu_tanh(x)) for a bf16 value x.
inline float gelu_tanh_bf16(float x) {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (uint32_t b = 0; b < 65536; ++b) t[b] = round_bf16(gelu_tanh(bf16_to_f32(uint16_t(b))));
    return t;
  }();
  return table[f32_to_bf16(x)];
}

}  // namespace strata::models
