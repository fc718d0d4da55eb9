// Activation quantization as DeepSeek's kernels do it. Scales are powers of two (ue8m0):
// scale = 2^ceil(log2(amax · (1/qmax))), the block's values are divided by it (exact),
// clamped to ±qmax, rounded to the nearest e4m3 / e2m1 value (ties to even), and multiplied
// back. Results are the dequantized values (what the GEMMs and the fake-quant paths consume);
// they are exact in fp32 and in bf16 (a few-bit significand times a power of two).
#pragma once
#include <cstdint>

namespace strata::kernels {

inline constexpr int64_t kActBlock = 128;   // linear-layer activations: 1×128 blocks
inline constexpr float kFp8AmaxFloor = 1e-4f;  // act_quant clamps amax from below
inline constexpr float kFp4AmaxFloor = 6.0f * 1.1754943508222875e-38f;  // 6·2^-126

// Power-of-two scale for a block with this amax (amax ≥ floor assumed applied).
float fp8_block_scale(float amax);
float fp4_block_scale(float amax);
// The same scales as e8m0 bytes, for the block x[0..n) (floor applied): what a cache entry
// stores beside its codes (a model's entry codec).
uint8_t fp8_block_scale_e8m0(const float* x, int64_t n);
uint8_t fp4_block_scale_e8m0(const float* x, int64_t n);

// FP8 quantize-dequantize of x[0..n) in blocks of `block` (n a multiple of block); y may be x.
void quant_fp8(const float* x, int64_t n, int64_t block, float* y);
// The scalar reference, and the AVX-512 version (block % 16 == 0; bit-identical, NaN included)
// that quant_fp8 dispatches to when AVX-512 is active: every linear layer's activations pass
// through it, and scalar it was ~9% of a prefill.
void quant_fp8_reference(const float* x, int64_t n, int64_t block, float* y);
namespace avx512 {
void quant_fp8(const float* x, int64_t n, int64_t block, float* y);
}
// FP4 (e2m1) quantize-dequantize in blocks of `block`; y may be x.
void quant_fp4(const float* x, int64_t n, int64_t block, float* y);

// In-place fake quantization of bf16-valued activations (window KV: FP8 in 64s; indexer
// queries and keys: FP4 in 32s).
inline void fake_quant_fp8(float* x, int64_t n, int64_t block = 64) { quant_fp8(x, n, block, x); }
inline void fake_quant_fp4(float* x, int64_t n, int64_t block = 32) { quant_fp4(x, n, block, x); }

}  // namespace strata::kernels
