// A DSA checkpoint's weights, bound in place where the mapped tensors can be used as they are:
// FP8 linears as e4m3 codes with their block scales turned into e8m0 bytes (the kernels' scale
// format; the published weight_scale_inv are fp32 powers of two), bf16 linears as they are,
// norm weights and biases as fp32 values. The absorbed MLA needs kv_b_proj per head in two
// orientations; those are dequantized once to bf16 (W_UKᵀ [kv_lora][nope], W_UV [v][kv_lora]).
#pragma once
#include <cstdint>
#include <list>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "kernels/linear.h"
#include "models/dsa/config.h"

namespace strata::dsa {

using kernels::LinearWeight;

struct SwigluWeights {
  LinearWeight gate, up, down;
};

struct IndexerWeights {
  LinearWeight wq_b, wk, weights_proj;
  std::vector<float> k_norm_weight, k_norm_bias;
};

struct MlaWeights {
  LinearWeight q_a, q_b, kv_a, o;
  std::vector<float> q_a_norm, kv_a_norm;
  std::vector<LinearWeight> uk_t;  // per head: [kv_lora, nope] bf16 (absorbs q_nope into the latent)
  std::vector<LinearWeight> uv;    // per head: [v, kv_lora] bf16 (the latent output to v)
  bool has_indexer = false;
  IndexerWeights indexer;
};

struct MoeWeights {
  LinearWeight gate;            // [E, d], fp32 product
  std::vector<float> bias;      // e_score_correction_bias [E]
  std::vector<SwigluWeights> experts;
  bool has_shared = false;
  SwigluWeights shared;
};

struct DecoderWeights {
  std::vector<float> input_norm, post_norm;
  MlaWeights attn;
  bool dense = false;
  SwigluWeights mlp;  // dense layers
  MoeWeights moe;     // the others
};

struct MtpWeights {
  std::vector<float> enorm, hnorm, final_norm;
  LinearWeight eh_proj;             // [d, 2d]
  const uint16_t* embed = nullptr;  // the layer's own copy, else the main embedding
  LinearWeight head;                // its own shared_head.head, else lm_head
  DecoderWeights layer;
};

struct ModelWeights {
  const uint16_t* embed = nullptr;  // [V, d] bf16
  std::vector<float> norm;
  LinearWeight head;                // [V, d]
  std::vector<DecoderWeights> layers;
  bool has_mtp = false;
  MtpWeights mtp;
  std::list<std::vector<uint8_t>> owned;  // converted scales, dequantized kv_b heads, realigned tensors
};

// Binds every weight of a checked checkpoint (check_checkpoint ok); with_mtp: the MTP layer's too.
void bind_weights(const Config& c, const SafetensorsCheckpoint& ckpt, bool with_mtp, ModelWeights& w);

}  // namespace strata::dsa
