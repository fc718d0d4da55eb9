// The lightning indexer's q · k products as exact integer dot products.
//
// The indexer scores a query (heads × 128, FP4 fake-quantized: e2m1 × a power of two per 32)
// against every compressed key (stored as e2m1 nibbles and an e8m0 scale per 32), each product
// the canonical dot (dot.h) of the two fp32 rows. Every term is a small integer times a power of
// two, a 32-column block's sum an integer below 2^13 times 2^(its two scales), and with 4 blocks
// whose exponents span at most 53 - 13 - 2 = 38 bits no fp64 addition of the canonical dot can
// round: its result is the exact sum rounded once, which VNNI byte products give (the key codes
// as unsigned bytes, 16 keys side by side; the query's integers as signed bytes). Pairs outside
// that condition, or keys whose scales are 253 or more (where the fp32 value overflows), are
// computed by the canonical dot itself. At 128K tokens of context a CSA layer scans 32K keys
// × 64 heads per decoded token; as an fp64 product this was most of the step's growth.
// Keys stored as FP8 (e4m3 codes and an e8m0 scale per 32, the default cache format) hold the
// same FP4 values: each block's integers are recovered from its values (and checked).
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/aligned_buffer.h"

namespace strata::kernels {

// The queries in the route's form.
struct IndexQueriesFp4 {
  int64_t heads = 0, dim = 0;
  const float* values = nullptr;  // the fp32 queries (for pairs outside the condition)
  AlignedBuffer<int8_t> bytes;    // per head: dim integers, even columns then odd ones
  std::vector<int32_t> exps;      // per head and 32-block: the unit's exponent - 128
  std::vector<int32_t> corr;      // per head and block: 12 × Σ of its integers
};

// Whether the route applies: AVX-512 active, dim == 128, every query value an integer below 16
// times its 32-block's power of two (true of FP4 fake-quantized values), all finite.
bool prepare_index_queries_fp4(const float* q, int64_t heads, int64_t dim, IndexQueriesFp4& out);

// How the keys are stored: fp4 = dim / 2 nibble bytes (low nibble the even column) then dim / 32
// e8m0 scales; fp8 = dim e4m3 codes then dim / 32 e8m0 scales (the cache's index key formats).
enum class IndexKeyCodes { fp4, fp8 };

// z[h * ldz + t] = dot(q_h, key t's values) for t < nt; keys[t] points at key t's stored bytes.
void index_dots(const IndexQueriesFp4& q, IndexKeyCodes codes, const uint8_t* const* keys, int64_t nt, float* z,
                int64_t ldz);

}  // namespace strata::kernels
