// Per-layer input embeddings (PLE, Gemma 4's E-series). Each token gets a small input per
// layer from a second embedding table and a projection of its main embedding e:
//   ple  = bf16(embed_per_layer[id] · bf16(√P))                       [L][P]
//   proj = norm_P(bf16(bf16(W_proj e) · d^-½))                         [L][P]
//   in   = bf16(bf16(proj + ple) · 2^-½)
// and layer l adds, after its MLP, h += post_norm(W_up bf16(bf16(gelu_tanh(W_gate h)) · in[l])).
#pragma once
#include <cstdint>
#include <vector>

#include "models/gemma4/config.h"
#include "models/gemma4/weights.h"

namespace strata::gemma4 {

// e: the scaled main embeddings [n][d]; returns [n][L][P].
std::vector<float> per_layer_inputs(const Config& c, const ModelWeights& w, const int64_t* ids, const float* e,
                                    int64_t n);
// Layer l's block on h [n][d] in place; in: per_layer_inputs' output.
void per_layer_block(const Config& c, const PleWeights& w, const float* in, int64_t l, float* h, int64_t n);

}  // namespace strata::gemma4
