// Gemma 4's weights bound to the mapped checkpoint (BF16 tensors in place; a misaligned one is
// copied).
#pragma once
#include <cstdint>
#include <list>
#include <vector>

#include "io/safetensors.h"
#include "kernels/linear.h"
#include "models/gemma4/config.h"

namespace strata::gemma4 {

using kernels::LinearWeight;

struct GegluWeights {
  LinearWeight gate, up, down;
};

struct MoeWeights {
  LinearWeight router;              // [E, d]
  const uint16_t* router_scale = nullptr;  // [d]
  const uint16_t* expert_scale = nullptr;  // [E]
  std::vector<GegluWeights> experts;
  const uint16_t* pre_norm = nullptr;  // pre_feedforward_layernorm_2
  const uint16_t* post_norm_dense = nullptr;   // post_feedforward_layernorm_1
  const uint16_t* post_norm_experts = nullptr;  // post_feedforward_layernorm_2
};

struct AttentionWeights {
  LinearWeight q, k, v, o;  // k, v empty on KV-shared layers; v empty on K=V layers
  const uint16_t* q_norm = nullptr;
  const uint16_t* k_norm = nullptr;
};

struct PleWeights {  // a layer's per-layer-input block
  LinearWeight gate, projection;
  const uint16_t* post_norm = nullptr;
};

struct DecoderWeights {
  const uint16_t* input_norm = nullptr;
  const uint16_t* post_attention_norm = nullptr;
  const uint16_t* pre_feedforward_norm = nullptr;
  const uint16_t* post_feedforward_norm = nullptr;
  float layer_scalar = 1.0f;  // a bf16 value
  AttentionWeights attn;
  GegluWeights mlp;
  MoeWeights moe;  // enable_moe_block
  PleWeights ple;  // hidden_size_per_layer_input > 0
};

struct ModelWeights {
  const uint16_t* embed = nullptr;  // [V, d]
  const uint16_t* norm = nullptr;
  LinearWeight head;  // the embedding (tied)
  // PLE: the per-layer embedding [Vp, L·P], the projection of the main embedding [L·P, d], its norm [P].
  const uint16_t* ple_embed = nullptr;
  LinearWeight ple_projection;
  const uint16_t* ple_norm = nullptr;
  std::vector<DecoderWeights> layers;
  std::list<std::vector<uint8_t>> owned;  // realigned tensors
};

// Binds every weight of a checkpoint already checked against the config (check_checkpoint).
void bind_weights(const Config& c, const SafetensorsCheckpoint& ckpt, ModelWeights& w);

}  // namespace strata::gemma4
