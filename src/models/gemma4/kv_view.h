// The keys and values one layer's attention reads for one sequence's rows in a pass, position
// by position from `first`: k[j] and v[j] point at the KV-head-0 row of position first + j (head
// h at + h·D). They point into the cache where it holds the rows as attention reads them, and
// into `owned` for rows made for the pass (this pass's fresh rows, ring rows the pass itself
// overwrites, K=V rows rebuilt). A KV-shared layer reads its source layer's views.
#pragma once
#include <cstdint>
#include <vector>

namespace strata::gemma4 {

struct KvView {
  int64_t first = 0;
  std::vector<const uint16_t*> k, v;
  std::vector<uint16_t> owned;
};

}  // namespace strata::gemma4
