// The chunked delta rule built for AVX-512 (chunked_delta_rule_body.h): the same source and bits
// as the scalar build: tiles of 4 rows × 4 vectors of 16 lanes, 16 of the 32 registers.
#include "models/layers/chunked_delta_rule_body.h"

namespace strata::models::avx512 {
void chunked_delta_head(const ChunkedDeltaArgs& a, int64_t h, const ChunkedDeltaScratch& s) {
  chunked_delta_head_impl<16, 4, 4>(a, h, s);
}
}  // namespace strata::models::avx512
