// Qwen3.5's weights bound to the mapped checkpoint (no copies but for the few tensors whose
// offsets are misaligned or whose dtype the bf16 execution rounds: parameters are used as
// bf16(stored value), as transformers holds them when it loads the model in bfloat16).
#pragma once
#include <cstdint>
#include <list>
#include <vector>

#include "io/safetensors.h"
#include "kernels/linear.h"
#include "models/qwen3_5/config.h"
#include "models/qwen3_5/tensors.h"

namespace strata::qwen35 {

using kernels::LinearWeight;

struct SwigluWeights {
  LinearWeight gate, up, down;
};

struct MoeWeights {
  LinearWeight router;  // [E, d]
  std::vector<SwigluWeights> experts;
  SwigluWeights shared;
  LinearWeight shared_gate;  // [1, d]
};

struct DeltaNetWeights {
  LinearWeight qkv, z, b, a, out;
  std::vector<float> conv;               // [conv_dim][K], bf16 values
  std::vector<float> a_log, dt_bias;     // [Hv], bf16 values
  const uint16_t* norm = nullptr;        // [Dv], plain weight
};

struct AttentionWeights {
  LinearWeight q, k, v, o;  // q: [2·H·D, d], per head [q | gate]
  const uint16_t* q_norm = nullptr;
  const uint16_t* k_norm = nullptr;
};

struct DecoderWeights {
  bool linear = false;
  const uint16_t* input_norm = nullptr;
  const uint16_t* post_norm = nullptr;
  DeltaNetWeights gdn;
  AttentionWeights attn;
  SwigluWeights mlp;  // dense models
  MoeWeights moe;     // MoE models
};

struct ModelWeights {
  const uint16_t* embed = nullptr;  // [V, d]
  const uint16_t* norm = nullptr;
  LinearWeight head;  // lm_head, or the embedding when tied
  std::vector<DecoderWeights> layers;
  // MTP (mtp.*): fc over [norm_e(embed(next)), norm_h(hidden)], one decoder layer, a final norm.
  bool has_mtp = false;
  LinearWeight mtp_fc;
  const uint16_t* mtp_norm_embedding = nullptr;
  const uint16_t* mtp_norm_hidden = nullptr;
  const uint16_t* mtp_norm = nullptr;
  DecoderWeights mtp_layer;
  std::list<std::vector<uint8_t>> owned;  // converted or realigned tensors
};

// Binds every weight of a checkpoint already checked against the config (check_checkpoint).
void bind_weights(const Config& c, const SafetensorsCheckpoint& ckpt, ModelWeights& w);

}  // namespace strata::qwen35
