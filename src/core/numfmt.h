// Scalar number formats used by DeepSeek-V4 checkpoints and caches, with exact rounding.
//
//   bf16      1-8-7, round-to-nearest-even from f32, NaN stays NaN.
//   f16       IEEE binary16, RNE, overflow to infinity, subnormals kept.
//   e4m3fn    1-4-3 bias 7, no infinities, max ±448, 0x7F/0xFF are NaN ("fn" variant).
//   e8m0      scale byte: e -> 2^(e-127); 255 is NaN. No sign, no mantissa.
//   e2m1      4-bit float, values ±{0, .5, 1, 1.5, 2, 3, 4, 6}; two per byte, low nibble first.
//
// Saturation follows DeepSeek's kernels: activation and weight quantizers clamp to the
// format's range before the cast (act_quant clamps to ±448, fp4 quant to ±6), so the
// saturating encoders are the ones used by the engine. The non-saturating e4m3 encoder
// matches a plain cast (PyTorch's float -> float8_e4m3fn): anything that rounds past 448
// becomes NaN.
#pragma once
#include <bit>
#include <cstdint>

namespace strata {

inline float bf16_to_f32(uint16_t h) { return std::bit_cast<float>(uint32_t(h) << 16); }
inline uint16_t f32_to_bf16(float f) {  // inline: called per element on every bf16 rounding
  const uint32_t b = std::bit_cast<uint32_t>(f);
  if ((b & 0x7FFFFFFFu) > 0x7F800000u) return uint16_t((b >> 16) | 0x0040u);  // quiet NaN, sign kept
  const uint32_t lsb = (b >> 16) & 1u;
  return uint16_t((b + 0x7FFFu + lsb) >> 16);
}

float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);

inline constexpr float kE4M3Max = 448.0f;
float e4m3_to_f32(uint8_t v);
uint8_t f32_to_e4m3(float f, bool saturate = true);

inline constexpr uint8_t kE8M0NaN = 0xFF;
// Inline: kernels call it once per scale block inside their inner loops.
inline float e8m0_to_f32(uint8_t e) {
  if (e == kE8M0NaN) return std::bit_cast<float>(0x7FC00000u);
  if (e == 0) return std::bit_cast<float>(0x00400000u);  // 2^-127 is an f32 subnormal
  return std::bit_cast<float>(uint32_t(e) << 23);
}
// Smallest power of two >= x, as a scale byte (DeepSeek's fast_round_scale: ceil(log2 x)).
// x must be positive and finite; results are clamped to the representable [2^-127, 2^127].
uint8_t e8m0_ceil_from_f32(float x);

inline constexpr float kE2M1Max = 6.0f;
float e2m1_to_f32(uint8_t nibble);
uint8_t f32_to_e2m1(float f);  // saturating at ±6, RNE; sign kept for negative values that round to 0

// Packed pair access: element 2i is the low nibble of byte i, element 2i+1 the high nibble.
inline uint8_t e2m1_get(const uint8_t* packed, int64_t i) {
  uint8_t b = packed[i >> 1];
  return (i & 1) ? uint8_t(b >> 4) : uint8_t(b & 0xF);
}

// Round a float to the nearest bf16 value and return it as float (what a .to(bfloat16) does).
inline float round_bf16(float f) { return bf16_to_f32(f32_to_bf16(f)); }

}  // namespace strata
