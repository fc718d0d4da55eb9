// The lightning indexer's scan: one query's score of every cached index key (the only part of a
// DSA decode step that grows with the context: at 128K tokens, 64 heads × 128 dims × 131,072
// keys a layer). The score is lightning_indexer.h's:
//   I[s] = fp32( fp32(Σ_j fp32(relu(fp32(q_j · k_s)) · w_j)) · k_scale_s ).
// q_j · k_s is a dot of e4m3 values: its products and 128-term sum are exact in fp64, so any order
// gives the same bits and the kernel vectorizes across heads. The head sum is the canonical
// 16-lane fp64 sum (head j into lane j % 16, kernels/dot.h's fold), rounded once.
#pragma once
#include <cstdint>

#include "cache/entry_array.h"
#include "core/cpu.h"

namespace strata::dsa {

inline constexpr int64_t kIndexDim = 128;

// qT: the query's e4m3 values transposed, qT[i * heads + j] (doubles); w: [heads] (heads a
// multiple of 8, at most 256); keys [first, n) of `keys` (132-byte entries) → out[n - first].
using IndexScanFn = void (*)(const double* qT, const float* w, int64_t heads, const cache::EntryArray& keys,
                             int64_t first, int64_t n, float* out);
void index_scan_reference(const double* qT, const float* w, int64_t heads, const cache::EntryArray& keys, int64_t first,
                          int64_t n, float* out);
namespace avx512 {
void index_scan(const double* qT, const float* w, int64_t heads, const cache::EntryArray& keys, int64_t first,
                int64_t n, float* out);
}
IndexScanFn index_scan_fn(Isa isa);
IndexScanFn index_scan_fn();  // the active ISA's

// The e4m3 values of every code as doubles (the scan's key operand).
const double* e4m3_double_table();

}  // namespace strata::dsa
