#include "core/numfmt.h"

#include <cmath>
#include <cstring>

namespace strata {

float f16_to_f32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t man = h & 0x3FFu;
  if (exp == 0x1F) {
    // infinity, or NaN made quiet with its payload kept (what F16C's vcvtph2ps does)
    return std::bit_cast<float>(sign | 0x7F800000u | (man << 13) | (man ? 0x00400000u : 0u));
  }
  if (exp == 0) {
    // subnormal: man * 2^-24, exact in f32
    float v = std::ldexp(float(man), -24);
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t f32_to_f16(float f) {
  uint32_t b = std::bit_cast<uint32_t>(f);
  uint16_t sign = uint16_t((b >> 16) & 0x8000u);
  uint32_t a = b & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return uint16_t(sign | 0x7E00u | ((a >> 13) & 0x3FFu));  // NaN, payload kept, quiet
  if (a >= 0x477FF000u) return uint16_t(sign | 0x7C00u);  // rounds to >= 65520 -> inf
  if (a < 0x38800000u) {
    // result is subnormal (or zero): quantum 2^-24; a * 2^24 is exact, rint is RNE
    float v = std::bit_cast<float>(a) * 16777216.0f;
    return uint16_t(sign | uint16_t(std::nearbyint(v)));
  }
  uint32_t lsb = (a >> 13) & 1u;
  uint32_t r = a + 0xFFFu + lsb;  // round mantissa to 10 bits, carry may bump the exponent
  return uint16_t(sign | ((r >> 13) - (112u << 10)));
}

float e4m3_to_f32(uint8_t v) {
  uint32_t sign = v & 0x80u;
  uint32_t exp = (v >> 3) & 0xFu;
  uint32_t man = v & 0x7u;
  float mag;
  if (exp == 0xF && man == 0x7) return std::bit_cast<float>((sign << 24) | 0x7FC00000u);
  if (exp == 0)
    mag = std::ldexp(float(man), -9);
  else
    mag = std::bit_cast<float>(((exp + 120) << 23) | (man << 20));
  return sign ? -mag : mag;
}

uint8_t f32_to_e4m3(float f, bool saturate) {
  uint32_t b = std::bit_cast<uint32_t>(f);
  uint8_t sign = uint8_t((b >> 24) & 0x80u);
  uint32_t a = b & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return uint8_t(sign | 0x7F);  // NaN
  float m = std::bit_cast<float>(a);
  if (saturate) {
    if (m > kE4M3Max) m = kE4M3Max;
  } else if (m >= 480.0f) {
    return uint8_t(sign | 0x7F);  // beyond the rounding range of 448 (and inf): NaN
  }
  if (m < 0.015625f) {  // below 2^-6: subnormal, quantum 2^-9
    return uint8_t(sign | uint8_t(std::nearbyint(m * 512.0f)));  // 8 -> 0x08, the smallest normal
  }
  a = std::bit_cast<uint32_t>(m);
  uint32_t lsb = (a >> 20) & 1u;
  uint32_t r = (a + 0x7FFFFu + lsb) >> 20;  // exponent and 3 mantissa bits, rounded
  uint32_t code = r - (120u << 3);
  if (code > 0x7E) return uint8_t(sign | 0x7F);  // (464, 480) rounds to the NaN code
  return uint8_t(sign | code);
}

uint8_t e8m0_ceil_from_f32(float x) {
  if (std::isnan(x)) return kE8M0NaN;
  if (!(x > 0.0f)) return 0;
  if (std::isinf(x)) return 254;
  int exp;
  float m = std::frexp(x, &exp);  // x = m * 2^exp, m in [0.5, 1)
  int l = (m == 0.5f) ? exp - 1 : exp;  // ceil(log2 x)
  int e = l + 127;
  if (e < 0) e = 0;
  if (e > 254) e = 254;
  return uint8_t(e);
}

namespace {
constexpr float kE2M1Values[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
}

float e2m1_to_f32(uint8_t nibble) {
  float v = kE2M1Values[nibble & 7];
  return (nibble & 8) ? -v : v;
}

uint8_t f32_to_e2m1(float f) {
  uint8_t sign = std::signbit(f) ? 8 : 0;
  float a = std::fabs(f);
  if (std::isnan(f)) return uint8_t(sign | 7);  // e2m1 has no NaN; saturate like an overflow
  // Decision boundaries are the midpoints; at a tie the even code (lower mantissa bit 0) wins.
  uint8_t c;
  if (a <= 0.25f) c = 0;
  else if (a < 0.75f) c = 1;
  else if (a <= 1.25f) c = 2;
  else if (a < 1.75f) c = 3;
  else if (a <= 2.5f) c = 4;
  else if (a < 3.5f) c = 5;
  else if (a <= 5.0f) c = 6;
  else c = 7;
  return uint8_t(sign | c);
}

}  // namespace strata
