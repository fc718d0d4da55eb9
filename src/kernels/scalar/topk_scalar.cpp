#include <algorithm>
#include <numeric>

#include "kernels/topk.h"

namespace strata::kernels {

std::vector<int64_t> topk(const float* v, int64_t n, int64_t k) {
  k = std::clamp<int64_t>(k, 0, n);
  std::vector<int64_t> idx(static_cast<size_t>(n));
  std::iota(idx.begin(), idx.end(), 0);
  auto before = [v](int64_t a, int64_t b) { return v[a] > v[b] || (v[a] == v[b] && a < b); };
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), before);
  idx.resize(size_t(k));
  return idx;
}

}  // namespace strata::kernels
