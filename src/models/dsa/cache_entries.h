// The bytes of one token's cache entries, as DeepSeek's FP8 sparse-MLA kernels store them:
//   latent entry: kv_lora e4m3 codes | an fp32 power-of-two scale per 128 | rope bf16 values
//                 (656 B at kv_lora 512, rope 64);
//   index key:    index_head_dim e4m3 codes | an fp32 scale per 128 (132 B at 128).
// Encoding is act_quant (kernels/quant.h: 1x128 blocks, ue8m0 scales); every read decodes the
// same values, so attention and the indexer see identical keys in prefill and decode.
#pragma once
#include <cstdint>

namespace strata::dsa {

// e4m3 codes + fp32 scales of x[0..n) (n a multiple of 128) into codes[n], scales[n/128].
void fp8_encode(const float* x, int64_t n, uint8_t* codes, float* scales);
// The values a block of codes stands for, without the scale (the indexer's integer-like dot).
void fp8_codes_to_f32(const uint8_t* codes, int64_t n, float* out);

void encode_latent(const float* latent, int64_t kv_lora, const float* rope_key, int64_t rope, uint8_t* entry);
// out[0..kv_lora) the dequantized latent, out[kv_lora..kv_lora+rope) the rope key.
void decode_latent(const uint8_t* entry, int64_t kv_lora, int64_t rope, float* out);

// The same values as bf16 bits (exact: an e4m3 value times a power of two), for the attention
// kernels that read bf16 keys (models/layers/kv_dots.h).
void decode_latent_bf16(const uint8_t* entry, int64_t kv_lora, int64_t rope, uint16_t* out);

// Whether a latent entry is a filler (model.h restart_mtp: all zero bytes). A real entry's block
// scales are positive (act_quant floors the amax), so a zero first scale tells them apart.
bool latent_is_filler(const uint8_t* entry, int64_t kv_lora);

void encode_index_key(const float* key, int64_t dim, uint8_t* entry);
// The key's e4m3 values (unscaled) into out[0..dim), and its scale (one per 128: dim == 128 in
// both published models; the score multiplies by it once per key).
float decode_index_key(const uint8_t* entry, int64_t dim, float* out);

}  // namespace strata::dsa
