// The gated delta rule (Gated DeltaNet), in the recurrent form: the canonical computation for
// prefill and decode alike, so that a sequence's outputs do not depend on how its tokens are
// chunked or batched (reference/README.md, Qwen3.5 decisions). Per token and value head, with S
// the [dk][dv] fp32 state, every step one fp32 operation (no FMA):
//   d = exp(g);  S ← S·d;  kv[j] = Σ_i S[i][j]·k[i];  u = (v − kv)·β;  S ← S + k uᵀ;  o[j] = Σ_i S[i][j]·q[i]
// the two sums in fp64 rounded once to fp32 (the project's product rule).
#pragma once
#include <cstdint>

namespace strata::models {

// s_in → s_out (may alias); q, k prepared (prepare_delta_qk); v [dv] bf16 values; o [dv] fp32.
void gated_delta_step(const float* s_in, float* s_out, const float* q, const float* k, const float* v, float g,
                      float beta, int64_t dk, int64_t dv, float* o);
// The scalar reference of the same step (the AVX-512 one gives its bits, tested).
void gated_delta_step_scalar(const float* s_in, float* s_out, const float* q, const float* k, const float* v, float g,
                             float beta, int64_t dk, int64_t dv, float* o);

// The kernel's q / k preparation, in place: x · rsqrt(fp32(Σx²) + 1e-6) (Σx² in fp64 rounded
// once), and q then × fp32(dk^-½).
void prepare_delta_qk(float* q, float* k, int64_t dk);

// The gates from the projections (bf16 values) and the layer's A_log, dt_bias (bf16 values):
// β = bf16(sigmoid(b)), g = (−exp(A_log)) · softplus(a + dt_bias) (softplus: x above 20).
void delta_gates(float a, float b, float a_log, float dt_bias, float* g, float* beta);

}  // namespace strata::models
