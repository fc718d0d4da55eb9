// The lightning indexer's scan: one query's score of every cached index key (the only part of a
// DSA decode step that grows with the context: at 128K tokens, 64 heads × 128 dims × 131,072
// keys a layer). The score is lightning_indexer.h's:
//   I[s] = fp32( fp32(Σ_j fp32(relu(d_j) · w_j)) · k_scale_s ),  d_j = fp32(q_j · k_s).
// The head sum is the canonical 16-lane fp64 sum (head j into lane j % 16, kernels/dot.h's
// fold), rounded once, in both numerics profiles. The dot d_j differs:
//   exact  q_j · k_s is a dot of e4m3 values: its products and 128-term sum are exact in fp64, so
//          any order gives the same bits (the kernel vectorizes across heads), rounded once;
//   fast   one vdpbf16ps lane fed the column pairs in order, like the official kernel's fp32
//          accumulation of FP8 products: acc = +0, then for p = 0..63, acc += q[2p+1]·k[2p+1] and
//          acc += q[2p]·k[2p], each step rounded to fp32 (kernels/dpbf16.h). e4m3 values are bf16
//          values, a product is a multiple of 2^-18 below 2^18, so no step flushes or overflows.
//          The bf16 unit does 4× the multiply-adds of fp64 FMAs; the AVX-512 kernel puts 16 heads
//          in a register's lanes, the key's column pair broadcast.
#pragma once
#include <cstdint>

#include "cache/entry_array.h"
#include "core/cpu.h"
#include "core/numerics.h"

namespace strata::dsa {

inline constexpr int64_t kIndexDim = 128;
inline constexpr int64_t kIndexPairs = kIndexDim / 2;

// Heads rounded up to 16: the stride of ScanQuery::pairs.
inline int64_t index_pair_stride(int64_t heads) { return (heads + 15) / 16 * 16; }

// One query as the scans read it (heads a multiple of 8, at most 256).
struct ScanQuery {
  const double* qT = nullptr;       // exact: qT[i * heads + j], the e4m3 values
  const uint32_t* pairs = nullptr;  // fast: pairs[p * index_pair_stride(heads) + j], bf16 bits of
                                    // column 2p (low half) and 2p + 1 (high half); padded heads zero
  const float* w = nullptr;         // [heads]
  int64_t heads = 0;
};

// Keys [first, n) of `keys` (132-byte entries) → out[n - first].
using IndexScanFn = void (*)(const ScanQuery& q, const cache::EntryArray& keys, int64_t first, int64_t n, float* out);
void index_scan_reference(const ScanQuery& q, const cache::EntryArray& keys, int64_t first, int64_t n, float* out);
// The fast profile's scan, written plainly with the emulated instruction.
void index_scan_fast_reference(const ScanQuery& q, const cache::EntryArray& keys, int64_t first, int64_t n,
                               float* out);
namespace avx512 {
void index_scan(const ScanQuery& q, const cache::EntryArray& keys, int64_t first, int64_t n, float* out);
void index_scan_fast(const ScanQuery& q, const cache::EntryArray& keys, int64_t first, int64_t n, float* out);
}  // namespace avx512
IndexScanFn index_scan_fn(Isa isa, Numerics numerics);
IndexScanFn index_scan_fn();  // the active ISA's and profile's

// The e4m3 values of every code as doubles (the exact scan's key operand) and as bf16 bits.
const double* e4m3_double_table();
const uint16_t* e4m3_bf16_table();

}  // namespace strata::dsa
