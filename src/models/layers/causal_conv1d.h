// Causal depthwise conv1d with state (Gated DeltaNet, KDA), as the official bf16 torch path
// rounds it: c = bf16(Σ_j w[ch][j] · x_{t-K+1+j}[ch]) with the K products summed in fp64 and
// rounded once to fp32, then y = bf16(silu(c)) (silu in fp64, rounded once to fp32). The state
// is the K − 1 pre-conv rows before the token (oldest first), zero at the start of a sequence
// (the conv's left padding), kept as bf16: the rows are projections already rounded to bf16.
#pragma once
#include <cstdint>

namespace strata::models {

// One token: x [channels] pre-conv (bf16 values); tail_in [K-1][channels]; tail_out (may alias
// tail_in) gets the rows before the next token; y [channels]. w: [channels][K] fp32 (bf16 values).
void causal_conv1d_step(const uint16_t* tail_in, uint16_t* tail_out, const float* x, const float* w,
                        int64_t channels, int64_t kernel, float* y);

}  // namespace strata::models
