#include "models/deepseek_v4/entry_codec.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/numfmt.h"
#include "kernels/convert.h"
#include "kernels/quant.h"

namespace strata::dsv4 {

namespace {

constexpr int64_t kKvBlock = 64, kIndexBlock = 32;

// Layout of a kv entry: codes [nope], scales [nope/64], (pad to 2), rope bf16 [rope], pad to 8.
struct KvLayout {
  int64_t nope, scales, rope_off, bytes;
  explicit KvLayout(const EntryCodec& c)
      : nope(c.head_dim - c.rope_dim), scales(nope / kKvBlock), rope_off((nope + scales + 1) / 2 * 2),
        bytes((rope_off + 2 * c.rope_dim + 7) / 8 * 8) {}
};

// The bits come back, or both are NaN (a NaN stays a NaN, as the fake-quant leaves it).
bool same(float a, float b) {
  return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b) || (std::isnan(a) && std::isnan(b));
}

// One block of n values as e4m3 codes (e2m1 nibbles) under a shared e8m0 scale; pack()
// checks the result.
void pack_block_fp8(const float* x, int64_t n, uint8_t* codes, uint8_t* scale) {
  *scale = kernels::fp8_block_scale_e8m0(x, n);  // the fake-quant's own scale
  const float s = e8m0_to_f32(*scale);
  for (int64_t i = 0; i < n; ++i) codes[i] = f32_to_e4m3(x[i] / s);
}

void pack_block_fp4(const float* x, int64_t n, uint8_t* packed, uint8_t* scale) {
  *scale = kernels::fp4_block_scale_e8m0(x, n);
  const float s = e8m0_to_f32(*scale);
  for (int64_t i = 0; i < n; i += 2) packed[i / 2] = uint8_t(f32_to_e2m1(x[i] / s) | (f32_to_e2m1(x[i + 1] / s) << 4));
}

}  // namespace

int64_t EntryCodec::bytes() const {
  switch (kind) {
    case Kind::kv: return KvLayout(*this).bytes;
    case Kind::index_fp8: return head_dim + head_dim / kIndexBlock;
    case Kind::index_fp4: return head_dim / 2 + head_dim / kIndexBlock;
  }
  return 0;
}

void EntryCodec::pack(const float* x, uint8_t* out) const {
  std::memset(out, 0, size_t(bytes()));  // padding bytes are zero: equal states are equal bytes
  if (kind == Kind::kv) {
    const KvLayout L(*this);
    for (int64_t b = 0; b < L.scales; ++b) pack_block_fp8(x + b * kKvBlock, kKvBlock, out + b * kKvBlock, out + L.nope + b);
    for (int64_t i = 0; i < rope_dim; ++i) {
      const uint16_t h = f32_to_bf16(x[L.nope + i]);
      std::memcpy(out + L.rope_off + 2 * i, &h, 2);
    }
  } else {
    for (int64_t b = 0; b < head_dim / kIndexBlock; ++b) {
      if (kind == Kind::index_fp8)
        pack_block_fp8(x + b * kIndexBlock, kIndexBlock, out + b * kIndexBlock, out + head_dim + b);
      else
        pack_block_fp4(x + b * kIndexBlock, kIndexBlock, out + b * kIndexBlock / 2, out + head_dim / 2 + b);
    }
  }
  // Lossless or an error: what unpack() gives back must be x, bit for bit.
  std::vector<float> back(static_cast<size_t>(head_dim));
  unpack(out, back.data());
  for (int64_t i = 0; i < head_dim; ++i)
    if (!same(back[size_t(i)], x[i]))
      throw Error("cache entry: value " + std::to_string(i) + " (" + std::to_string(x[i]) +
                  ") is not exactly representable in its storage format (not a fake-quantized entry)");
}

// Unpacking is on the decode path (every attended entry, every index key of a CSA layer's
// scan), so it goes through the kernels' block-scaled conversions (kernels/convert.h: a scalar
// reference and AVX2 / AVX-512 versions, bitwise equal), one call per entry.
void EntryCodec::unpack(const uint8_t* in, float* x) const {
  const kernels::ConvertOps& cv = kernels::convert_ops();
  if (kind == Kind::kv) {
    const KvLayout L(*this);
    cv.e4m3_blocks_to_f32(in, in + L.nope, size_t(kKvBlock), x, size_t(L.nope));
    // the bf16 dims sit at an even offset; copied out so the conversion reads aligned uint16s
    uint16_t rope[256];
    for (int64_t i0 = 0; i0 < rope_dim; i0 += 256) {
      const int64_t n = std::min<int64_t>(256, rope_dim - i0);
      std::memcpy(rope, in + L.rope_off + 2 * i0, size_t(2 * n));
      cv.bf16_to_f32(rope, x + L.nope + i0, size_t(n));
    }
    return;
  }
  if (kind == Kind::index_fp8)
    cv.e4m3_blocks_to_f32(in, in + head_dim, size_t(kIndexBlock), x, size_t(head_dim));
  else
    cv.e2m1_blocks_to_f32(in, in + head_dim / 2, size_t(kIndexBlock), x, size_t(head_dim));
}

}  // namespace strata::dsv4
