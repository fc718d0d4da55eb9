// The gated delta rule (Gated DeltaNet) in the chunked form: the WY representation with the UT
// transform, as the reference's `delta_rule_chunked` (reference/qwen3_5.py) and the fast GPU
// kernels compute it. It is an alternative for prefill, not the canonical computation: the
// recurrent `gated_delta_step` (gated_delta_rule.h) stays the contract, because the chunked form's
// fp32 results differ from it in the last bits (reference/README.md, "Chunked form and the
// measured spread") and would make outputs depend on how a sequence's tokens are chunked.
//
// Per value head, with S the [dk][dv] fp32 state, the recurrence being computed is
//   S ← S·exp(g_t);  u = (v_t − Sᵀk_t)·β_t;  S ← S + k_t uᵀ;  o_t = Sᵀq_t
// Tokens go in chunks of C (the first chunk starts at the call's first token). Within a chunk,
// with γ_i = Σ_{t≤i} g_t and D[i][j] = exp(γ_i − γ_j) (j ≤ i):
//   A = strictly_lower(β_i (k_i·k_j) D[i][j]);  (I + A)U = βV,  (I + A)W = β e^γ K  (forward substitution)
//   V' = U − W S;  O = (e^γ Q) S + ((Q Kᵀ) ⊙ D) V';  S ← e^{γ_C} S + (e^{γ_C − γ} K)ᵀ V'
// Every exponent is a difference γ_i − γ_j with j ≤ i, so ≤ 0 (g ≤ 0): decays underflow to 0,
// nothing overflows, however strong the decay.
//
// Numerics: fp32 throughout (the exponents in fp64, rounded once), no FMA, every sum in a fixed
// order (each matrix element accumulates its terms in ascending index order). Heads run on
// worker threads, each head's work on one thread, so the bits depend neither on the thread count
// nor on the ISA (the scalar, AVX2 and AVX-512 builds of the kernel are one source).
#pragma once
#include <cstdint>

#include "core/cpu.h"

namespace strata::models {

inline constexpr int64_t kDeltaChunk = 64;

// n tokens of `heads` value heads. q, k [n][heads][dk] prepared as gated_delta_step expects them
// (prepare_delta_qk: L2-normalized, q scaled), already repeated to the value heads; v [n][heads][dv];
// g, beta [n][heads]; state [heads][dk][dv] fp32, updated in place; out [n][heads][dv] fp32.
// chunk ≥ 1 tokens (Error otherwise).
void chunked_delta_rule(const float* q, const float* k, const float* v, const float* g, const float* beta, int64_t n,
                        int64_t heads, int64_t dk, int64_t dv, float* state, float* out, int64_t chunk = kDeltaChunk);

// The same on the kernel built for one ISA (tests, benchmarks); every ISA gives the same bits.
// Error if this CPU lacks it.
void chunked_delta_rule(Isa isa, const float* q, const float* k, const float* v, const float* g, const float* beta,
                        int64_t n, int64_t heads, int64_t dk, int64_t dv, float* state, float* out,
                        int64_t chunk = kDeltaChunk);

}  // namespace strata::models
