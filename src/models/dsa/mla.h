// Multi-head latent attention with a DSA selection (DeepSeek-V3.2 MLA, GLM-5 GlmMoeDsaAttention),
// in the absorbed form for every token, prefill and decode alike:
//   qr = rms_norm(q_a(x)); q = q_b(qr) = [q_nope | q_pe] per head, q_pe interleaved-RoPE'd;
//   latent = rms_norm(kv_a(x)[:kv_lora]), k_pe = RoPE(kv_a(x)[kv_lora:]) → the FP8 cache entry;
//   q_lat[h] = bf16(q_nope[h] · W_UK[h]); per selected key s (cached, dequantized):
//   z = fp32(fp32(fp32(q_lat · latent_s) + fp32(q_pe · k_pe_s)) · scale);
//   P = bf16(softmax z); o_lat = bf16(Σ_s P_s latent_s); o[h] = bf16(o_lat[h] · W_UV[h]ᵀ); out = o_proj(o).
// Every read of a key goes through its cache entry, so a token's output is the same whether its
// keys were written in this pass or earlier ones (prefill == decode == any chunking).
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/rope.h"
#include "models/dsa/config.h"
#include "models/dsa/state.h"
#include "models/dsa/weights.h"

namespace strata::dsa {

// RMSNorm with fp32 weights: y = bf16(w · (x · rsqrt(mean(x²) + eps))).
void rms_norm(const float* x, const float* w, int64_t n, float eps, float* y);

// One layer's attention over stacked segments: x [n][d] (the input norm's output), out [n][d].
// `selection` carries each row's selected key positions between layers: a layer with its own
// indexer overwrites it, a shared-indexer layer reads it.
void mla_forward(const Config& c, const MlaWeights& w, const kernels::RopeTable& rope, const std::vector<Segment>& segs,
                 const float* x, int64_t n, std::vector<std::vector<int32_t>>& selection, float* out);

}  // namespace strata::dsa
