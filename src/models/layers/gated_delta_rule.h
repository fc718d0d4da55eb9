// The gated delta rule, one token of one head (Gated DeltaNet; the recurrent form): with S the
// [dk][dv] fp32 state,
//   S ← exp(g)·S;  u = β·(v − Sᵀk);  S ← S + k uᵀ;  o = Sᵀq
// q and k L2-normalized (q also scaled by dk^-½) by the caller; g < 0 the log decay. Sums run
// in a fixed order (over i for Sᵀk and Sᵀq), so a token's output and state depend only on its
// inputs: the same bits alone, in a batch, on any thread.
#pragma once
#include <cstdint>

namespace strata::models {

// s_in → s_out (may alias); o [dv].
void gated_delta_step(const float* s_in, float* s_out, const float* q, const float* k, const float* v, float g,
                      float beta, int64_t dk, int64_t dv, float* o);

// x / sqrt(Σx² + eps) in place (fla's l2norm), then × scale.
void l2_normalize(float* x, int64_t n, float eps, float scale);

}  // namespace strata::models
