#include <algorithm>

#include "kernels/topk.h"

namespace strata::kernels {

// Streaming: a heap of the k best so far (its top the worst of them), so the memory is k
// indices whatever n is — the indexer's n is every visible compressed key (32K at 128K tokens
// of context), k its top-k (512 for V4).
std::vector<int64_t> topk(const float* v, int64_t n, int64_t k) {
  k = std::clamp<int64_t>(k, 0, n);
  std::vector<int64_t> heap;
  if (k == 0) return heap;
  heap.reserve(size_t(k));
  // `before`: a is chosen ahead of b. As the heap's order, the top is the element every other
  // one comes before: the worst kept.
  auto before = [v](int64_t a, int64_t b) { return v[a] > v[b] || (v[a] == v[b] && a < b); };
  for (int64_t i = 0; i < n; ++i) {
    if (int64_t(heap.size()) < k) {
      heap.push_back(i);
      std::push_heap(heap.begin(), heap.end(), before);
    } else if (before(i, heap.front())) {
      std::pop_heap(heap.begin(), heap.end(), before);
      heap.back() = i;
      std::push_heap(heap.begin(), heap.end(), before);
    }
  }
  std::sort_heap(heap.begin(), heap.end(), before);  // best first
  return heap;
}

}  // namespace strata::kernels
