// Causal depthwise conv1d with state (Gated DeltaNet, KDA): output channel c of token t is
// Σ_j w[c][j] · x_{t-K+1+j}[c] over the K most recent pre-conv rows, then SiLU. The state is
// the K - 1 rows before the token (oldest first), zero at the start of a sequence, kept as bf16:
// the rows are projections already rounded to bf16, so the tail holds them exactly.
#pragma once
#include <cstdint>

namespace strata::models {

// One token: x [channels] pre-conv (bf16 values); tail_in [K-1][channels] the rows before it;
// tail_out (may alias tail_in) gets the rows before the next token; y [channels] = SiLU(conv)
// in fp32, the sum over j in order. w: [channels][K] fp32.
void causal_conv1d_step(const uint16_t* tail_in, uint16_t* tail_out, const float* x, const float* w,
                        int64_t channels, int64_t kernel, float* y);

}  // namespace strata::models
