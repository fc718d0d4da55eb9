// The fast profile's linear on AVX-512 (kernels/fast_linear.h): the bf16 route on vdpbf16ps
// itself, the f32 route on vfmadd231ps, both in the definition's lane order and blocks.
//
// Weights go kTile rows at a time (a divisor of FP8's 128-row scale band), kChunk columns at a
// time: the chunk is decoded to bf16 (or fp32) with its scales applied, 32 or 64 KB that stay in
// L1/L2 while every activation row runs over it (512, 1024 and 2048 columns measured the same);
// bf16 and f32 weights that need no padding are read in place (bf16 rows for fp32 activations
// widened in registers); one activation row takes kernels that decode in registers straight into
// the products. Register tiles of MR activation
// rows × NR weight rows hold the block sums; the running totals of each (row, output) live in a
// small buffer, added once a block. Every output is the definition's, whatever the tiling.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/numfmt.h"
#include "kernels/aligned_buffer.h"
#include "kernels/fast_linear.h"
#include "kernels/parallel.h"

namespace strata::kernels::avx512 {

namespace {

constexpr int64_t kTile = 16;    // weight rows a tile
constexpr int64_t kChunk = 1024;  // columns decoded at a time: a multiple of the 128-column block

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// What the kernel reads: activations and weights as bf16 pairs (the bf16 route), or fp32
// activations against fp32 weights, or against bf16 weights widened in registers (f32 route).
enum class Kind { bf16, f32, f32_w16 };

template <Kind K>
inline __m512 load_w(const void* w, int64_t k) {
  if constexpr (K == Kind::f32_w16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(w) + k));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  } else if constexpr (K == Kind::bf16) {
    return _mm512_loadu_ps(reinterpret_cast<const float*>(static_cast<const uint16_t*>(w) + k));
  } else {
    return _mm512_loadu_ps(static_cast<const float*>(w) + k);
  }
}

template <Kind K>
inline __m512 load_x(const void* x, int64_t k) {
  if constexpr (K == Kind::bf16)
    return _mm512_loadu_ps(reinterpret_cast<const float*>(static_cast<const uint16_t*>(x) + k));
  else
    return _mm512_loadu_ps(static_cast<const float*>(x) + k);
}

// MR activation rows × NR weight rows over columns [0, len) of a chunk (whole 128-column blocks
// but the padded last one). x rows at x + r·xs, weight rows at w + n·ws (elements); the lane
// totals at tot + (r·kTile + n)·16.
template <int MR, int NR, Kind K>
void micro(const void* xv, int64_t xs, const void* wv, int64_t ws, int64_t len, float* tot) {
  constexpr int64_t per_vec = K == Kind::bf16 ? 32 : 16;
  constexpr int64_t esz_x = K == Kind::bf16 ? 2 : 4, esz_w = K == Kind::f32 ? 4 : 2;
  const char* x = static_cast<const char*>(xv);
  const char* w = static_cast<const char*>(wv);
  for (int64_t c = 0; c < len; c += kFastBlock) {
    const int64_t end = std::min(c + kFastBlock, len);
    __m512 acc[MR][NR];
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 16
      for (int n = 0; n < NR; ++n) acc[r][n] = _mm512_setzero_ps();
    for (int64_t k = c; k < end; k += per_vec) {
      __m512 xr[MR];
#pragma GCC unroll 16
      for (int r = 0; r < MR; ++r) xr[r] = load_x<K>(x + r * xs * esz_x, k);
#pragma GCC unroll 16
      for (int n = 0; n < NR; ++n) {
        const __m512 wn = load_w<K>(w + n * ws * esz_w, k);
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r) {
          if constexpr (K == Kind::bf16)
            acc[r][n] = _mm512_dpbf16_ps(acc[r][n], (__m512bh)xr[r], (__m512bh)wn);
          else
            acc[r][n] = _mm512_fmadd_ps(xr[r], wn, acc[r][n]);
        }
      }
    }
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 16
      for (int n = 0; n < NR; ++n) {
        float* t = tot + (r * kTile + n) * 16;
        _mm512_storeu_ps(t, _mm512_add_ps(_mm512_loadu_ps(t), acc[r][n]));
      }
  }
}

// Every activation row against the tile's kTile weight rows over a chunk's [0, len).
template <Kind K>
void tile_chunk(const void* x, int64_t xs, int64_t rows, const void* w, int64_t ws, int64_t len, float* tot) {
  const int64_t esz_x = K == Kind::bf16 ? 2 : 4, esz_w = K == Kind::f32 ? 4 : 2;
  const auto* xb = static_cast<const char*>(x);
  const auto* wb = static_cast<const char*>(w);
  for (int64_t r = 0; r < rows;) {
    const char* xr = xb + r * xs * esz_x;
    float* t = tot + r * kTile * 16;
    switch (std::min<int64_t>(rows - r, 4)) {
      case 4:
        for (int n = 0; n < kTile; n += 4) micro<4, 4, K>(xr, xs, wb + n * ws * esz_w, ws, len, t + n * 16);
        r += 4;
        break;
      case 3:
        for (int n = 0; n < kTile; n += 8) micro<3, 8, K>(xr, xs, wb + n * ws * esz_w, ws, len, t + n * 16);
        r += 3;
        break;
      case 2:
        for (int n = 0; n < kTile; n += 8) micro<2, 8, K>(xr, xs, wb + n * ws * esz_w, ws, len, t + n * 16);
        r += 2;
        break;
      default:
        micro<1, 16, K>(xr, xs, wb, ws, len, t);
        r += 1;
        break;
    }
  }
}

// t[i] += t[i + h] for h = 8, 4, 2, 1: the definition's fold.
// (The low half by an extract, not a cast: GCC 12 warns falsely about the cast's undefined
// register once it is inlined deep enough.)
inline float fold16(__m512 v) {
  __m256 a = _mm256_add_ps(_mm512_extractf32x8_ps(v, 0), _mm512_extractf32x8_ps(v, 1));
  __m128 b = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  b = _mm_add_ps(b, _mm_movehl_ps(b, b));
  b = _mm_add_ss(b, _mm_movehdup_ps(b));
  return _mm_cvtss_f32(b);
}

// ---- decoding columns [c0, c1) of weight row r (c1 <= in rounded up) to dst[0, c1 - c0) ----

// The 128 e4m3 magnitudes as bf16 (exact: e4m3's subnormals are normal bf16 numbers), the NaN
// code a quiet NaN: four registers of 32 entries.
struct E4m3Table {
  alignas(64) uint16_t bf16[128];
  E4m3Table() {
    for (int i = 0; i < 128; ++i) bf16[i] = f32_to_bf16(e4m3_to_f32(uint8_t(i)));
  }
};
const E4m3Table& e4m3_table() {
  static const E4m3Table t;
  return t;
}

// 32 e4m3 codes times 2^k, for a k that keeps every non-zero magnitude a normal bf16 (e8m0 byte
// in [10, 246]): the magnitude from the table already scaled (k added to the exponent of its
// non-zero, non-NaN entries), then the sign.
inline __m512i e4m3_bf16(__m256i b, const __m512i (&t)[4]) {
  const __m512i i = _mm512_cvtepu8_epi16(b);
  const __m512i lo = _mm512_permutex2var_epi16(t[0], i, t[1]);  // index bits 0-5
  const __m512i hi = _mm512_permutex2var_epi16(t[2], i, t[3]);
  const __m512i v = _mm512_mask_blend_epi16(_mm256_test_epi8_mask(b, _mm256_set1_epi8(0x40)), lo, hi);
  return _mm512_mask_mov_epi16(v, _mm256_movepi8_mask(b), _mm512_or_si512(v, _mm512_set1_epi16(int16_t(0x8000))));
}

// The general form (any scale): through fp32, code · 2^120 restoring the bias, times the scale.
inline __m512 e4m3_scaled_f32(__m512i v, __m512 s) {
  const __m512i vm = _mm512_and_si512(v, _mm512_set1_epi32(0x7F));
  const __m512i sign = _mm512_and_si512(_mm512_slli_epi32(v, 24), _mm512_set1_epi32(int(0x80000000u)));
  __m512 m = _mm512_castsi512_ps(_mm512_or_si512(_mm512_slli_epi32(vm, 20), sign));
  m = _mm512_mul_ps(_mm512_mul_ps(m, _mm512_set1_ps(0x1p120f)), s);
  const __mmask16 nan = _mm512_cmpeq_epi32_mask(vm, _mm512_set1_epi32(0x7F));
  return _mm512_castsi512_ps(_mm512_mask_or_epi32(_mm512_castps_si512(m), nan, sign, _mm512_set1_epi32(0x7FC00000)));
}

// Rows [r0, r0 + rows) of an FP8 weight (one 128-row scale band: a tile), columns [c0, c1), to
// dst + j·stride. Block by block, so each block's scaled table serves every row of the tile.
void decode_fp8_tile(const LinearWeight& w, int64_t r0, int64_t rows, int64_t c0, int64_t c1, uint16_t* dst,
                     int64_t stride) {
  const int64_t in = w.in;
  const uint8_t* sc = w.scale + (r0 / 128) * ((in + 127) / 128);
  const E4m3Table& table = e4m3_table();
  for (int64_t c = c0; c < c1; c += kFastBlock) {
    const uint8_t e = sc[c / 128];
    const int64_t end = std::min(c + kFastBlock, c1);
    const int64_t full_end = std::min(end, in / 32 * 32);  // whole vectors inside the row
    if (e >= 10 && e <= 246) {
      const __m512i shift = _mm512_set1_epi16(int16_t((int(e) - 127) * 128));
      // every entry but zero (entry 0) and the NaN (entry 127) takes the scale
      const __m512i t[4] = {
          _mm512_mask_add_epi16(_mm512_load_si512(table.bf16), ~__mmask32(1), _mm512_load_si512(table.bf16), shift),
          _mm512_add_epi16(_mm512_load_si512(table.bf16 + 32), shift),
          _mm512_add_epi16(_mm512_load_si512(table.bf16 + 64), shift),
          _mm512_mask_add_epi16(_mm512_load_si512(table.bf16 + 96), __mmask32(0x7FFFFFFFu),
                                _mm512_load_si512(table.bf16 + 96), shift)};
      for (int64_t j = 0; j < rows; ++j) {
        const uint8_t* p = static_cast<const uint8_t*>(w.data) + (r0 + j) * in;
        uint16_t* d = dst + j * stride - c0;
        // the row's block after next: rows of a tile are far apart, so the hardware's stream
        // prefetch does not see a 128-byte run per row coming
        if (c + 2 * kFastBlock < in) {
          _mm_prefetch(reinterpret_cast<const char*>(p + c + 2 * kFastBlock), _MM_HINT_T0);
          _mm_prefetch(reinterpret_cast<const char*>(p + c + 2 * kFastBlock + 64), _MM_HINT_T0);
        }
        int64_t k = c;
        for (; k < full_end; k += 32)
          _mm512_storeu_si512(d + k, e4m3_bf16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + k)), t));
        for (; k < end; k += 32) {
          const int64_t n = in - k;
          const __mmask32 m = n <= 0 ? 0 : __mmask32((1u << n) - 1u);
          _mm512_storeu_si512(d + k, _mm512_maskz_mov_epi16(m, e4m3_bf16(_mm256_maskz_loadu_epi8(m, p + k), t)));
        }
      }
    } else {
      const __m512 s = _mm512_set1_ps(e8m0_to_f32(e));
      for (int64_t j = 0; j < rows; ++j) {
        const uint8_t* p = static_cast<const uint8_t*>(w.data) + (r0 + j) * in;
        uint16_t* d = dst + j * stride - c0;
        for (int64_t k = c; k < end; k += 32) {
          const int64_t n = std::min<int64_t>(32, in - k);
          const __mmask32 m = n >= 32 ? ~__mmask32(0) : n <= 0 ? 0 : __mmask32((1u << n) - 1u);
          const __m256i b = _mm256_maskz_loadu_epi8(m, p + k);
          const __m512 lo = e4m3_scaled_f32(_mm512_cvtepu8_epi32(_mm256_castsi256_si128(b)), s);
          const __m512 hi = e4m3_scaled_f32(_mm512_cvtepu8_epi32(_mm256_extracti128_si256(b, 1)), s);
          _mm512_storeu_si512(d + k, _mm512_maskz_mov_epi16(m, (__m512i)_mm512_cvtne2ps_pbh(hi, lo)));
        }
      }
    }
  }
}

struct Fp4Tables {
  alignas(64) uint16_t bf16[32];  // e2m1 code i & 15 as bf16 (the index's fifth bit ignored)
  alignas(64) float f32[16];
  Fp4Tables() {
    for (int i = 0; i < 32; ++i) bf16[i] = f32_to_bf16(e2m1_to_f32(uint8_t(i & 15)));
    for (int i = 0; i < 16; ++i) f32[i] = e2m1_to_f32(uint8_t(i));
  }
};
const Fp4Tables& fp4_tables() {
  static const Fp4Tables t;
  return t;
}

// 32 e2m1 codes (16 bytes) times 2^k, k in [-125, 125]: a table of the unscaled bf16 values,
// then k added to the exponent of the non-zero ones.
void decode_fp4_chunk(const LinearWeight& w, int64_t r, int64_t c0, int64_t c1, uint16_t* dst) {
  const int64_t in = w.in;
  const uint8_t* p = static_cast<const uint8_t*>(w.data) + r * (in / 2);
  const uint8_t* sc = w.scale + r * (in / 32);
  const Fp4Tables& tables = fp4_tables();
  const __m512i table = _mm512_load_si512(tables.bf16);
  const __m512 values = _mm512_load_ps(tables.f32);
  const __m512i first = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i second = _mm512_add_epi32(first, _mm512_set1_epi32(8));
  // this row's bytes of the next chunk (rows are far apart: no stream for the hardware to see)
  for (int64_t b = c1 / 2; b < std::min(c1 + kChunk, in) / 2; b += 64)
    _mm_prefetch(reinterpret_cast<const char*>(p + b), _MM_HINT_T0);
  for (int64_t c = c0; c < std::min(c1, in); c += 32) {
    const uint8_t e = sc[c / 32];
    const __m512i d = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + c / 2)));
    if (e >= 2 && e <= 252) {
      // dword b | b << 12: its low word's 5 index bits are the low nibble (and a copy bit the
      // table ignores), its high word the high nibble: columns 2j and 2j + 1 in order
      const __m512i i = _mm512_or_si512(d, _mm512_slli_epi32(d, 12));
      const __m512i v = _mm512_permutexvar_epi16(i, table);
      const __mmask32 nz = _mm512_test_epi16_mask(i, _mm512_set1_epi16(7));
      _mm512_storeu_si512(dst + (c - c0), _mm512_mask_add_epi16(v, nz, v, _mm512_set1_epi16(int16_t((int(e) - 127) * 128))));
    } else {
      const __m512 s = _mm512_set1_ps(e8m0_to_f32(e));
      const __m512i lo = _mm512_and_si512(d, _mm512_set1_epi32(0xF)), hi = _mm512_srli_epi32(d, 4);
      const __m512 v0 = _mm512_mul_ps(_mm512_permutexvar_ps(_mm512_permutex2var_epi32(lo, first, hi), values), s);
      const __m512 v1 = _mm512_mul_ps(_mm512_permutexvar_ps(_mm512_permutex2var_epi32(lo, second, hi), values), s);
      _mm512_storeu_si512(dst + (c - c0), (__m512i)_mm512_cvtne2ps_pbh(v1, v0));
    }
  }
  for (int64_t k = std::max(c0, in); k < c1; ++k) dst[k - c0] = 0;
}

void decode_chunk_bf16(const LinearWeight& w, int64_t r, int64_t c0, int64_t c1, uint16_t* dst) {
  if (w.format == WeightFormat::fp4) return decode_fp4_chunk(w, r, c0, c1, dst);
  const uint16_t* p = static_cast<const uint16_t*>(w.data) + r * w.in;  // bf16: copy, zeros past the row
  for (int64_t k = c0; k < c1; ++k) dst[k - c0] = k < w.in ? p[k] : uint16_t(0);
}

// The f32 route's weights when they cannot be read in place: exact fp32 values, zeros past the row.
void decode_chunk_f32(const LinearWeight& w, int64_t r, int64_t c0, int64_t c1, float* dst, std::vector<float>& row) {
  if (w.format == WeightFormat::f32) {
    const float* p = static_cast<const float*>(w.data) + r * w.in;
    for (int64_t k = c0; k < c1; ++k) dst[k - c0] = k < w.in ? p[k] : 0.0f;
    return;
  }
  row.resize(size_t(w.in));
  kernels::dequant_row(w, r, row.data());  // the scalar decode (rare: fp8 / fp4 weights with fp32 activations)
  for (int64_t k = c0; k < c1; ++k) dst[k - c0] = k < w.in ? row[size_t(k)] : 0.0f;
}

// ---- few activation rows: weights decoded in registers straight into the products ----
//
// A tile's weight rows go R at a time against M activation rows: per 32 columns the R weight
// vectors are decoded once (no scratch round trip) and each feeds M vdpbf16ps; the M·R block sums
// and totals stay in registers (2·M·R ≤ 16). A source, made for weight rows row..row + R, gives
// row r's bf16 vector at column k, w(r, k), after block(c, end) at each block's start, where it
// prefetches (prefetch_groups_ahead).

// A group's R rows are contiguous and the next groups' follow them, so the weights ahead are one
// linear stream: each block prefetches the bytes kAheadGroups groups on that match how far this
// group is read. Into L2, not L1: a prefetch into L1 holds one of the core's few L1 miss slots
// until its line arrives, and with them all taken one thread read 10 GB/s; into L2 the same
// stream read 17-18 (Qwen3.5's 3584 x 1024 bf16 gate/up from memory, one thread). Per row, at
// the row's own column, it reached the same 10: the linear stream is what the hardware follows.
constexpr int64_t kAheadGroups = 2;
inline void prefetch_groups_ahead(const void* group, int64_t group_bytes, int64_t read, int64_t bytes) {
  const char* p = static_cast<const char*>(group) + kAheadGroups * group_bytes + read;
  for (int64_t off = 0; off < bytes; off += 64) _mm_prefetch(p + off, _MM_HINT_T1);
}

// FP8 rows of one scale band: the band's per-block tables, the scale folded in.
template <int R>
struct Fp8Rows {
  static constexpr bool kStateless = false;  // block() loads the block's tables
  const uint8_t* p[R];
  const uint16_t* tabs;
  int64_t in;
  __m512i t[4];
  Fp8Rows(const LinearWeight& w, int64_t row, const uint16_t* band_tables) : tabs(band_tables), in(w.in) {
    for (int r = 0; r < R; ++r) p[r] = static_cast<const uint8_t*>(w.data) + (row + r) * in;
  }
  void block(int64_t c, int64_t end) {
    const uint16_t* tb = tabs + (c / 128) * 128;
    for (int q = 0; q < 4; ++q) t[q] = _mm512_load_si512(tb + 32 * q);
    prefetch_groups_ahead(p[0], R * in, R * c, R * (end - c));
  }
  __m512i w(int r, int64_t k) const { return e4m3_bf16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p[r] + k)), t); }
};

// Every e8m0 scale byte's 16 e2m1 values as decode_weight_bf16 writes them (the definition's
// weight), repeated so a 5-bit index ignores its top bit: one 64-byte vpermw table per byte, the
// scale folded in (no exponent arithmetic, no range limit on the scale).
struct Fp4ScaledTables {
  alignas(64) uint16_t t[256][32];
  Fp4ScaledTables() {
    uint8_t codes[16];
    for (int b = 0; b < 16; ++b) codes[b] = uint8_t(((2 * b) & 15) | (((2 * b + 1) & 15) << 4));
    for (int e = 0; e < 256; ++e) {
      const uint8_t scale = uint8_t(e);
      LinearWeight w;
      w.format = WeightFormat::fp4;
      w.data = codes;
      w.scale = &scale;
      w.out = 1;
      w.in = 32;
      decode_weight_bf16(w, 0, t[e]);
    }
  }
};
const Fp4ScaledTables& fp4_scaled_tables() {
  static const Fp4ScaledTables t;
  return t;
}

// FP4 rows, 16 bytes (32 columns, one scale) a vector: the bytes in every 128-bit lane, word m
// takes byte m/2 (vpshufb) shifted so its nibble m is in the low bits (vpsrlvw), the row's scaled
// table maps it to the bf16 weight.
template <int R>
struct Fp4Rows {
  static constexpr bool kStateless = true;  // w(r, k) at any column, whatever block() saw last
  const uint8_t* p[R];
  const uint8_t* sc[R];
  int64_t in;
  Fp4Rows(const LinearWeight& w, int64_t row) : in(w.in) {
    for (int r = 0; r < R; ++r)
      p[r] = static_cast<const uint8_t*>(w.data) + (row + r) * (in / 2), sc[r] = w.scale + (row + r) * (in / 32);
  }
  const uint16_t (*tables)[32] = fp4_scaled_tables().t;
  // lane L holds words 8L..8L+7: bytes 4L..4L+3, each twice (the high byte of each word zeroed)
  const __m512i spread = _mm512_set_epi8(
      -1, 15, -1, 15, -1, 14, -1, 14, -1, 13, -1, 13, -1, 12, -1, 12, -1, 11, -1, 11, -1, 10, -1, 10, -1, 9, -1, 9,
      -1, 8, -1, 8, -1, 7, -1, 7, -1, 6, -1, 6, -1, 5, -1, 5, -1, 4, -1, 4, -1, 3, -1, 3, -1, 2, -1, 2, -1, 1, -1, 1,
      -1, 0, -1, 0);
  const __m512i odd_shift = _mm512_set1_epi32(4 << 16);  // odd words: the high nibble
  void block(int64_t c, int64_t end) { prefetch_groups_ahead(p[0], R * in / 2, R * c / 2, R * (end - c) / 2); }
  __m512i w(int r, int64_t k) const {
    const __m512i b = _mm512_maskz_broadcast_i32x4(0xFFFF, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p[r] + k / 2)));
    const __m512i i = _mm512_srlv_epi16(_mm512_shuffle_epi8(b, spread), odd_shift);
    return _mm512_permutexvar_epi16(i, _mm512_load_si512(tables[sc[r][k / 32]]));
  }
};

// bf16 rows read in place.
template <int R>
struct Bf16Rows {
  static constexpr bool kStateless = true;
  const uint16_t* p[R];
  int64_t in;
  Bf16Rows(const LinearWeight& w, int64_t row) : in(w.in) {
    for (int r = 0; r < R; ++r) p[r] = static_cast<const uint16_t*>(w.data) + (row + r) * in;
  }
  void block(int64_t c, int64_t end) { prefetch_groups_ahead(p[0], 2 * R * in, 2 * R * c, 2 * R * (end - c)); }
  __m512i w(int r, int64_t k) const { return _mm512_loadu_si512(p[r] + k); }
};

// One 32-column step: the R weight vectors at column k decoded once, each against M rows.
template <int M, int R, class Src>
[[gnu::always_inline]] inline void few_rows_step(Src& s, const uint16_t* xb, int64_t xs, int64_t k,
                                                 __m512 (&acc)[M][R]) {
  __m512i wv[R];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) wv[r] = s.w(r, k);
#pragma GCC unroll 8
  for (int m = 0; m < M; ++m) {
    const __m512bh x = (__m512bh)_mm512_loadu_si512(xb + m * xs + k);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) acc[m][r] = _mm512_dpbf16_ps(acc[m][r], x, (__m512bh)wv[r]);
  }
}

// M activation rows (bf16, xs apart, zeros past in up to a multiple of 32) × the source's R rows
// over [0, in) (in % 32 == 0): out[m·os + r].
template <int M, int R, class Src>
[[gnu::always_inline]] inline void few_rows_group(Src& s, const uint16_t* xb, int64_t xs, int64_t in, float* out,
                                                  int64_t os) {
  __m512 tot[M][R];
  for (int m = 0; m < M; ++m)
    for (int r = 0; r < R; ++r) tot[m][r] = _mm512_setzero_ps();
  int64_t c0 = 0;
  if constexpr (M == 1 && Src::kStateless) {
    // one activation row: two blocks at once, so eight chains of vdpbf16ps cover its latency
    // instead of four; each lane still sums its block in column order and the blocks in order
    for (; c0 + 2 * kFastBlock <= in; c0 += 2 * kFastBlock) {
      s.block(c0, c0 + 2 * kFastBlock);
      __m512 lo[1][R], hi[1][R];
      for (int r = 0; r < R; ++r) lo[0][r] = _mm512_setzero_ps(), hi[0][r] = _mm512_setzero_ps();
#pragma GCC unroll 4
      for (int j = 0; j < int(kFastBlock / 32); ++j) {
        few_rows_step<1, R>(s, xb, xs, c0 + 32 * j, lo);
        few_rows_step<1, R>(s, xb, xs, c0 + kFastBlock + 32 * j, hi);
      }
      for (int r = 0; r < R; ++r) tot[0][r] = _mm512_add_ps(_mm512_add_ps(tot[0][r], lo[0][r]), hi[0][r]);
    }
  }
  for (int64_t c = c0; c < in; c += kFastBlock) {
    const int64_t end = std::min(c + kFastBlock, in);
    s.block(c, end);
    __m512 acc[M][R];
    for (int m = 0; m < M; ++m)
      for (int r = 0; r < R; ++r) acc[m][r] = _mm512_setzero_ps();
#pragma GCC unroll 4
    for (int64_t k = c; k < end; k += 32) few_rows_step<M, R>(s, xb, xs, k, acc);
    for (int m = 0; m < M; ++m)
      for (int r = 0; r < R; ++r) tot[m][r] = _mm512_add_ps(tot[m][r], acc[m][r]);
  }
  for (int m = 0; m < M; ++m)
    for (int r = 0; r < R; ++r) out[m * os + r] = fold16(tot[m][r]);
}

// Weight rows per group for M activation rows: the sums' registers bound M·R.
constexpr int few_rows_r(int M) { return M <= 4 ? 4 : 2; }
constexpr int64_t kFewRowsGroup = 8;  // activation rows a pass
constexpr int64_t kFewRowsMax = 16;   // more rows take the tiles (decoded once, 4 x 4 registers)

// Calls group<R>(j) over [0, n) in groups of up to kMaxR rows.
template <int kMaxR, class F>
void row_groups(int64_t n, F&& group) {
  for (int64_t j = 0; j < n;) {
    const int64_t g = std::min<int64_t>(kMaxR, n - j);
    if (g >= 4) {
      if constexpr (kMaxR >= 4) group.template operator()<4>(j);
    } else if (g == 3) {
      if constexpr (kMaxR >= 3) group.template operator()<3>(j);
    } else if (g == 2) {
      if constexpr (kMaxR >= 2) group.template operator()<2>(j);
    } else {
      group.template operator()<1>(j);
    }
    j += g;
  }
}

// Calls pass<M>(m0) over activation rows [0, rows) in passes of up to kFewRowsGroup.
template <class F>
void activation_passes(int64_t rows, F&& pass) {
  for (int64_t m0 = 0; m0 < rows; m0 += kFewRowsGroup) {
    switch (std::min(kFewRowsGroup, rows - m0)) {
      case 8: pass.template operator()<8>(m0); break;
      case 7: pass.template operator()<7>(m0); break;
      case 6: pass.template operator()<6>(m0); break;
      case 5: pass.template operator()<5>(m0); break;
      case 4: pass.template operator()<4>(m0); break;
      case 3: pass.template operator()<3>(m0); break;
      case 2: pass.template operator()<2>(m0); break;
      default: pass.template operator()<1>(m0); break;
    }
  }
}

// rows activation rows (bf16, xs apart) against weight rows [o0, o0 + n) of a tile, through the
// sources Src<R>(w, o0 + j, extra...): out[m·kTile + j].
template <template <int> class Src, class... Extra>
void few_rows(const LinearWeight& w, const uint16_t* xb, int64_t xs, int64_t rows, int64_t o0, int64_t n, float* out,
              Extra... extra) {
  activation_passes(rows, [&]<int M>(int64_t m0) {
    row_groups<few_rows_r(M)>(n, [&]<int R>(int64_t j) {
      Src<R> s(w, o0 + j, extra...);
      few_rows_group<M, R>(s, xb + m0 * xs, xs, w.in, out + m0 * kTile + j, kTile);
    });
  });
}

// FP8: needs in % 128 == 0 and every block scale of the band in the tables' range; false
// (nothing written) otherwise.
bool fp8_few_rows(const LinearWeight& w, const uint16_t* xb, int64_t xs, int64_t rows, int64_t o0, int64_t n,
                  float* out) {
  const int64_t in = w.in, blocks = in / 128;
  if (in % 128 != 0) return false;
  const uint8_t* sc = w.scale + (o0 / 128) * blocks;
  for (int64_t b = 0; b < blocks; ++b)
    if (sc[b] < 10 || sc[b] > 246) return false;
  // tables are a function of the band's scale bytes alone: the band's eight tiles (and any band
  // with the same scales) reuse them
  thread_local AlignedBuffer<uint16_t> tabs;
  thread_local std::vector<uint8_t> tabs_for;
  if (tabs_for.size() != size_t(blocks) || !std::equal(sc, sc + blocks, tabs_for.begin())) {
    tabs.reserve(size_t(blocks * 128));
    tabs_for.assign(sc, sc + blocks);
    const E4m3Table& table = e4m3_table();
    for (int64_t b = 0; b < blocks; ++b) {
      const __m512i shift = _mm512_set1_epi16(int16_t((int(sc[b]) - 127) * 128));
      for (int q = 0; q < 4; ++q) {
        const __m512i u = _mm512_load_si512(table.bf16 + 32 * q);
        const __mmask32 m = q == 0 ? ~__mmask32(1) : q == 3 ? __mmask32(0x7FFFFFFFu) : ~__mmask32(0);
        _mm512_store_si512(tabs.data() + b * 128 + 32 * q, _mm512_mask_add_epi16(u, m, u, shift));
      }
    }
  }
  few_rows<Fp8Rows>(w, xb, xs, rows, o0, n, out, static_cast<const uint16_t*>(tabs.data()));
  return true;
}

// FP4: in % 128 == 0 (every scale byte is served).
bool fp4_few_rows(const LinearWeight& w, const uint16_t* xb, int64_t xs, int64_t rows, int64_t o0, int64_t n,
                  float* out) {
  if (w.in % 128 != 0) return false;
  few_rows<Fp4Rows>(w, xb, xs, rows, o0, n, out);
  return true;
}

// bf16 read in place: in % 32 == 0 (no padding to read past a row's end).
bool bf16_few_rows(const LinearWeight& w, const uint16_t* xb, int64_t xs, int64_t rows, int64_t o0, int64_t n,
                   float* out) {
  if (w.format != WeightFormat::bf16 || w.in % 32 != 0) return false;
  few_rows<Bf16Rows>(w, xb, xs, rows, o0, n, out);
  return true;
}

// bf16 rows read in place against one fp32 activation row (the f32 route), widened in registers.
template <int R>
void bf16_f32_row_group(const uint16_t* const* p, const float* x, int64_t in, float* out) {
  __m512 tot[R];
  for (int r = 0; r < R; ++r) tot[r] = _mm512_setzero_ps();
  for (int64_t c = 0; c < in; c += kFastBlock) {
    const int64_t end = std::min(c + kFastBlock, in);
    __m512 acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
    prefetch_groups_ahead(p[0], 2 * R * in, 2 * R * c, 2 * R * (end - c));
    for (int64_t k = c; k < end; k += 16) {
      const __m512 xv = _mm512_loadu_ps(x + k);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) acc[r] = _mm512_fmadd_ps(xv, load_w<Kind::f32_w16>(p[r], k), acc[r]);
    }
    for (int r = 0; r < R; ++r) tot[r] = _mm512_add_ps(tot[r], acc[r]);
  }
  for (int r = 0; r < R; ++r) out[r] = fold16(tot[r]);
}

// in a multiple of 16 (no padding to read past a row's end)
bool bf16_f32_one_row(const LinearWeight& w, const float* x, int64_t o0, int64_t n, float* out) {
  if (w.format != WeightFormat::bf16 || w.in % 16 != 0) return false;
  const uint16_t* base = static_cast<const uint16_t*>(w.data);
  row_groups<4>(n, [&]<int R>(int64_t j) {
    const uint16_t* p[R];
    for (int r = 0; r < R; ++r) p[r] = base + (o0 + j + r) * w.in;
    bf16_f32_row_group<R>(p, x, w.in, out + j);
  });
  return true;
}

// One route's rows (gathered: rows × kpad, their indices into y in idx) against all weights.
template <bool kBf16>
void route_product(const LinearWeight& w, const void* x, const std::vector<int64_t>& idx, float* y, bool rb) {
  const int64_t rows = int64_t(idx.size()), out = w.out, in = w.in;
  const int64_t kpad = round_up(in, kBf16 ? 32 : 16);
  const bool bf16_in_place = w.format == WeightFormat::bf16 && in % 32 == 0;
  const bool f32_in_place = w.format == WeightFormat::f32 && in % 16 == 0;
  const int64_t tiles = (out + kTile - 1) / kTile;
  const int64_t threads = num_threads();
  const int64_t grain = std::max<int64_t>(1, tiles / (8 * threads));
  const int64_t min_tiles = std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(1, kTile * in * rows));
  parallel_for_dynamic(tiles, min_tiles, grain, [&](int64_t tb, int64_t te) {
    thread_local AlignedBuffer<uint16_t> wb;
    thread_local AlignedBuffer<float> wf, tot;
    thread_local std::vector<float> row;
    wb.reserve(size_t(kTile * kChunk));
    wf.reserve(size_t(kTile * kChunk));
    tot.reserve(size_t(rows * kTile * 16));
    for (int64_t t = tb; t < te; ++t) {
      const int64_t o0 = t * kTile, n = std::min(kTile, out - o0);
      if constexpr (kBf16) {
        alignas(64) float few[kFewRowsMax * kTile];
        const auto* xb = static_cast<const uint16_t*>(x);
        if (rows <= kFewRowsMax && ((w.format == WeightFormat::fp8 && fp8_few_rows(w, xb, kpad, rows, o0, n, few)) ||
                                    (w.format == WeightFormat::fp4 && fp4_few_rows(w, xb, kpad, rows, o0, n, few)) ||
                                    bf16_few_rows(w, xb, kpad, rows, o0, n, few))) {
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t j = 0; j < n; ++j) y[idx[size_t(r)] * out + o0 + j] = fast_output(few[r * kTile + j], rb);
          continue;
        }
      } else {
        float one[kTile];
        if (rows == 1 && bf16_f32_one_row(w, static_cast<const float*>(x), o0, n, one)) {
          for (int64_t j = 0; j < n; ++j) y[idx[0] * out + o0 + j] = fast_output(one[j], rb);
          continue;
        }
      }
      std::fill(tot.data(), tot.data() + rows * kTile * 16, 0.0f);
      const bool whole = n == kTile;
      for (int64_t c0 = 0; c0 < kpad; c0 += kChunk) {
        const int64_t c1 = std::min(c0 + kChunk, kpad), len = c1 - c0;
        if constexpr (kBf16) {
          const uint16_t* xc = static_cast<const uint16_t*>(x) + c0;
          if (bf16_in_place && whole) {
            tile_chunk<Kind::bf16>(xc, kpad, rows, static_cast<const uint16_t*>(w.data) + o0 * in + c0, in, len, tot.data());
            continue;
          }
          if (w.format == WeightFormat::fp8) decode_fp8_tile(w, o0, n, c0, c1, wb.data(), kChunk);
          for (int64_t j = 0; j < kTile; ++j) {
            uint16_t* d = wb.data() + j * kChunk;
            if (j >= n)
              std::fill(d, d + len, uint16_t(0));
            else if (w.format != WeightFormat::fp8)
              decode_chunk_bf16(w, o0 + j, c0, c1, d);
          }
          tile_chunk<Kind::bf16>(xc, kpad, rows, wb.data(), kChunk, len, tot.data());
        } else {
          const float* xc = static_cast<const float*>(x) + c0;
          if (w.format == WeightFormat::bf16 && in % 16 == 0 && whole) {
            tile_chunk<Kind::f32_w16>(xc, kpad, rows, static_cast<const uint16_t*>(w.data) + o0 * in + c0, in, len, tot.data());
            continue;
          }
          if (f32_in_place && whole) {
            tile_chunk<Kind::f32>(xc, kpad, rows, static_cast<const float*>(w.data) + o0 * in + c0, in, len, tot.data());
            continue;
          }
          for (int64_t j = 0; j < kTile; ++j) {
            float* d = wf.data() + j * kChunk;
            if (j < n)
              decode_chunk_f32(w, o0 + j, c0, c1, d, row);
            else
              std::fill(d, d + len, 0.0f);
          }
          tile_chunk<Kind::f32>(xc, kpad, rows, wf.data(), kChunk, len, tot.data());
        }
      }
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < n; ++j) {
          const float v = fold16(_mm512_loadu_ps(tot.data() + (r * kTile + j) * 16));
          y[idx[size_t(r)] * out + o0 + j] = fast_output(v, rb);
        }
    }
  });
}

}  // namespace

void fast_linear(const LinearWeight& w, const float* x, int64_t rows, const uint8_t* bf16_rows, float* y, bool rb) {
  const int64_t in = w.in, k32 = round_up(in, 32), k16 = round_up(in, 16);
  std::vector<int64_t> bi, fi;
  for (int64_t r = 0; r < rows; ++r) (bf16_rows[r] ? bi : fi).push_back(r);
  if (!bi.empty()) {
    AlignedBuffer<uint16_t> xb;
    xb.reserve(size_t(int64_t(bi.size()) * k32));
    parallel_for(int64_t(bi.size()), std::max<int64_t>(1, (int64_t(1) << 15) / std::max<int64_t>(1, in)),
                 [&](int64_t b, int64_t e) {
                   for (int64_t j = b; j < e; ++j) {
                     const float* xr = x + bi[size_t(j)] * in;
                     uint16_t* d = xb.data() + j * k32;
                     int64_t k = 0;
                     for (; k + 16 <= in; k += 16)  // the upper halves: these values are bf16
                       _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + k),
                                           _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_loadu_si512(xr + k), 16)));
                     for (; k < in; ++k) d[k] = uint16_t(std::bit_cast<uint32_t>(xr[k]) >> 16);
                     std::fill(d + in, d + k32, uint16_t(0));
                   }
                 });
    route_product<true>(w, xb.data(), bi, y, rb);
  }
  if (!fi.empty()) {
    // f32 weights (mHC's mixes: few outputs against a prefill's many wide rows) read rows that
    // need no padding in place (their stride is then kpad): copying them was most of the time
    if (w.format == WeightFormat::f32 && int64_t(fi.size()) == rows && in == k16 &&
        reinterpret_cast<uintptr_t>(x) % 64 == 0)
      return route_product<false>(w, x, fi, y, rb);
    AlignedBuffer<float> xf;
    xf.reserve(size_t(int64_t(fi.size()) * k16));
    for (size_t j = 0; j < fi.size(); ++j) {
      std::copy(x + fi[j] * in, x + fi[j] * in + in, xf.data() + int64_t(j) * k16);
      std::fill(xf.data() + int64_t(j) * k16 + in, xf.data() + int64_t(j + 1) * k16, 0.0f);
    }
    route_product<false>(w, xf.data(), fi, y, rb);
  }
}

}  // namespace strata::kernels::avx512
