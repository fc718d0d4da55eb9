#include "models/dsa/cache_entries.h"

#include <array>
#include <cstring>

#include "core/numfmt.h"
#include "kernels/quant.h"

namespace strata::dsa {
namespace {

const std::array<float, 256>& e4m3_table() {
  static const std::array<float, 256> t = [] {
    std::array<float, 256> v{};
    for (int i = 0; i < 256; ++i) v[size_t(i)] = e4m3_to_f32(uint8_t(i));
    return v;
  }();
  return t;
}

}  // namespace

void fp8_encode(const float* x, int64_t n, uint8_t* codes, float* scales) {
  for (int64_t b = 0; b < n / 128; ++b) {
    const float* xb = x + b * 128;
    const float s = e8m0_to_f32(kernels::fp8_block_scale_e8m0(xb, 128));
    scales[b] = s;
    for (int64_t i = 0; i < 128; ++i) codes[b * 128 + i] = f32_to_e4m3(xb[i] / s, true);  // exact division by 2^k
  }
}

void fp8_codes_to_f32(const uint8_t* codes, int64_t n, float* out) {
  const auto& t = e4m3_table();
  for (int64_t i = 0; i < n; ++i) out[i] = t[codes[i]];
}

void encode_latent(const float* latent, int64_t kv_lora, const float* rope_key, int64_t rope, uint8_t* entry) {
  float scales[64];
  fp8_encode(latent, kv_lora, entry, scales);
  std::memcpy(entry + kv_lora, scales, size_t(kv_lora / 128) * 4);
  uint8_t* r = entry + kv_lora + kv_lora / 128 * 4;
  for (int64_t i = 0; i < rope; ++i) {
    const uint16_t b = f32_to_bf16(rope_key[i]);
    std::memcpy(r + 2 * i, &b, 2);
  }
}

void decode_latent(const uint8_t* entry, int64_t kv_lora, int64_t rope, float* out) {
  const auto& t = e4m3_table();
  for (int64_t b = 0; b < kv_lora / 128; ++b) {
    float s;
    std::memcpy(&s, entry + kv_lora + 4 * b, 4);
    for (int64_t i = b * 128; i < (b + 1) * 128; ++i) out[i] = t[entry[i]] * s;  // exact: a power of two
  }
  const uint8_t* r = entry + kv_lora + kv_lora / 128 * 4;
  for (int64_t i = 0; i < rope; ++i) {
    uint16_t b;
    std::memcpy(&b, r + 2 * i, 2);
    out[kv_lora + i] = bf16_to_f32(b);
  }
}

void decode_latent_bf16(const uint8_t* entry, int64_t kv_lora, int64_t rope, uint16_t* out) {
  const auto& t = e4m3_table();
  for (int64_t b = 0; b < kv_lora / 128; ++b) {
    float s;
    std::memcpy(&s, entry + kv_lora + 4 * b, 4);
    for (int64_t i = b * 128; i < (b + 1) * 128; ++i) out[i] = f32_to_bf16(t[entry[i]] * s);  // exact in bf16
  }
  std::memcpy(out + kv_lora, entry + kv_lora + kv_lora / 128 * 4, size_t(rope) * 2);
}

bool latent_is_filler(const uint8_t* entry, int64_t kv_lora) {
  float s;
  std::memcpy(&s, entry + kv_lora, 4);
  return s == 0.0f;
}

void encode_index_key(const float* key, int64_t dim, uint8_t* entry) {
  float scales[16];
  fp8_encode(key, dim, entry, scales);
  std::memcpy(entry + dim, scales, size_t(dim / 128) * 4);
}

float decode_index_key(const uint8_t* entry, int64_t dim, float* out) {
  fp8_codes_to_f32(entry, dim, out);
  float s;
  std::memcpy(&s, entry + dim, 4);
  return s;
}

}  // namespace strata::dsa
