// The chunked delta rule built for AVX2 (chunked_delta_rule_body.h): the same source and bits as
// the scalar build: tiles of 4 rows × 2 vectors of 8 lanes, 8 of the 16 registers.
#include "models/layers/chunked_delta_rule_body.h"

namespace strata::models::avx2 {
void chunked_delta_head(const ChunkedDeltaArgs& a, int64_t h, const ChunkedDeltaScratch& s) {
  chunked_delta_head_impl<8, 4, 2>(a, h, s);
}
}  // namespace strata::models::avx2
