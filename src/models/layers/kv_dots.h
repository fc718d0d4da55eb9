// The two inner loops of exact attention over a bf16 K/V cache (Qwen3.5's gated attention):
// a query row (fp32, bf16 values) · a bf16 key, and a weighted bf16 value row added into fp64
// sums. Scalar reference and AVX-512 builds give the same bits (tested): the key dot sums its
// exact fp64 products in the canonical 16-lane order of kernels/dot.h; the value accumulation
// keeps each element's sum in key order (p is a bf16 value, so p·v is exact in fp64 and a fused
// multiply-add rounds it as a multiply then an add would).
#pragma once
#include <cstdint>

#include "core/cpu.h"

namespace strata::models {

struct KvDots {
  // Σ q[i]·k[i] over n (n % 16 == 0), unrounded fp64.
  double (*dot)(const float* q, const uint16_t* k, int64_t n);
  // The same for G query rows against one key (read once): out[g] = Σ q[g·qs + i]·k[i], q the
  // rows' fp32 values widened to fp64 once for every key.
  void (*dots)(const double* q, int64_t qs, int64_t G, const uint16_t* k, int64_t n, double* out);
  // acc[g·n + i] += p[j·G + g] · v[j][i] for keys j < nk in order, heads g < G, i < n (n % 16 == 0):
  // a block of keys per call, so the sums stay in registers across its keys.
  void (*accumulate)(double* acc, int64_t G, const double* p, const uint16_t* const* v, int64_t nk, int64_t n);
};

KvDots kv_dots(Isa isa);
KvDots kv_dots();  // the active ISA's

}  // namespace strata::models
