// Top-k selection: indices of the k largest values, largest first; equal values are ordered by
// lower index first, so the choice is deterministic (torch.topk leaves ties unspecified).
#pragma once
#include <cstdint>
#include <vector>

namespace strata::kernels {

std::vector<int64_t> topk(const float* v, int64_t n, int64_t k);

}  // namespace strata::kernels
