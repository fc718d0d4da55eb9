// ISA-specific loops behind kernels/probe.h.
#pragma once
#include <cstddef>
#include <cstdint>

namespace strata::kernels::scalar {
uint64_t sum_bytes(const uint8_t* p, size_t n);
inline constexpr double kFmaFlopsPerIter = 2.0 * 8 * 64;
void fma_loop(uint64_t iters);
}  // namespace strata::kernels::scalar

namespace strata::kernels::avx512 {
uint64_t sum_bytes(const uint8_t* p, size_t n);
// 12 independent vdpbf16ps per iteration, each 16 lanes x 2 products x 2 flops
inline constexpr double kBf16FlopsPerIter = 12.0 * 16 * 2 * 2;
void bf16_dot_loop(uint64_t iters);
// 12 independent vpdpbusd per iteration, each 64 int8 products x 2 ops
inline constexpr double kInt8OpsPerIter = 12.0 * 64 * 2;
void int8_dot_loop(uint64_t iters);
// 12 independent vfmadd231pd per iteration, each 8 lanes x 2 flops
inline constexpr double kFp64FlopsPerIter = 12.0 * 8 * 2;
void fp64_fma_loop(uint64_t iters);
}  // namespace strata::kernels::avx512
