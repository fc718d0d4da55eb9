// DeepSeek-V4 weights as views into the memory-mapped checkpoint. The reference dequantizes
// wo_a from FP8 to bf16 at load (its grouped einsum runs in bf16); strata reads the FP8 bytes
// as they are, which is the same weight wherever e4m3 × scale is exact in bf16, and keeps a
// bf16 copy only for a checkpoint where it is not (wo_a_fp8_is_exact).
#pragma once
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "core/huge_buffer.h"

#include "io/safetensors.h"
#include "kernels/linear.h"
#include "models/deepseek_v4/config.h"
#include "models/expert_placement.h"

namespace strata::dsv4 {

using kernels::LinearWeight;

struct CompressorWeights {
  LinearWeight wkv, wgate;        // bf16 [coff·hd, d], used as fp32 linears
  const float* ape = nullptr;     // [ratio, coff·hd]
  const uint16_t* norm = nullptr; // bf16 [hd]
};

struct IndexerWeights {
  LinearWeight wq_b;              // fp8 [ih·id, ql]
  LinearWeight weights_proj;      // bf16 [ih, d]
  CompressorWeights compressor;   // head dim id, rotate + FP4
};

struct AttentionWeights {
  const float* attn_sink = nullptr;  // [H]
  LinearWeight wq_a, wq_b, wkv, wo_b;
  const uint16_t* q_norm = nullptr;
  const uint16_t* kv_norm = nullptr;
  LinearWeight wo_a;                 // fp8 [G·ol, H·hd/G], activation used as given
  HugeBuffer<uint16_t> wo_a_bf16;    // the reference's bf16 copy, only where fp8 is not exact
  // wo_a as the forward pass multiplies it: a view made on demand, so that copies and moves of
  // this struct stay valid.
  LinearWeight wo_a_view() const {
    if (wo_a_bf16.size() == 0) return wo_a;
    return {kernels::WeightFormat::bf16, wo_a_bf16.data(), nullptr, wo_a.out, wo_a.in};
  }
  CompressorWeights compressor;      // ratio > 0
  IndexerWeights indexer;            // ratio 4
};

struct ExpertWeights {
  LinearWeight w1, w2, w3;
};

struct MoeWeights {
  LinearWeight gate;                 // bf16 [E, d], used as an fp32 linear
  const float* bias = nullptr;       // [E], score-routed layers
  const void* tid2eid = nullptr;     // [V, k], hash-routed layers
  bool tid2eid_i64 = true;
  std::vector<ExpertWeights> experts;
  ExpertWeights shared;
  // The ranks that run each routed expert (models/expert_parallel.h); one rank: all here.
  models::ExpertPlacement placement;
};

struct HcWeights {
  const float* fn = nullptr;     // [mix, hc·d]
  const float* base = nullptr;   // [mix]
  const float* scale = nullptr;  // [3] (or [1] for the head)
};

struct LayerWeights {
  int64_t layer = 0;
  HcWeights hc_attn, hc_ffn;
  const uint16_t* attn_norm = nullptr;
  const uint16_t* ffn_norm = nullptr;
  AttentionWeights attn;
  MoeWeights ffn;
};

// mtp.j: one more Block (layer id num_hidden_layers + j) fed with
// bf16(e_proj(enorm(embed(next id))) + h_proj(hnorm(main streams))), with its own hc_head and
// norm; the embedding and head are shared with the main model.
struct MtpWeights {
  LayerWeights block;
  LinearWeight e_proj, h_proj;      // fp8 [d, d]
  const uint16_t* enorm = nullptr;
  const uint16_t* hnorm = nullptr;
  const uint16_t* norm = nullptr;
  HcWeights hc_head;
};

struct ModelWeights {
  const uint16_t* embed = nullptr;  // bf16 [V, d]
  LinearWeight head;                // bf16 [V, d], used as an fp32 linear
  const uint16_t* norm = nullptr;
  HcWeights hc_head;
  std::vector<LayerWeights> layers;  // main layers
  std::vector<MtpWeights> mtp;       // present when the checkpoint has mtp.j.* tensors
  // Aligned copies of the few F32 / BF16 tensors whose file offset is not a multiple of their
  // element size (safetensors does not require alignment; reading them in place would be a
  // misaligned load). Empty for checkpoints written with aligned offsets.
  std::list<std::vector<uint8_t>> realigned;
};

// Binds every tensor of the checkpoint (which must match the config: see tensors.h's check),
// main layers and the MTP blocks present (wo_a dequantized to bf16 where wo_a_fp8_is_exact is
// false).
ModelWeights bind_weights(const Config& c, const SafetensorsCheckpoint& ckpt);

// Whether multiplying wo_a's FP8 bytes (each product e4m3 × scale, exact in fp32) gives the
// reference's bf16 weight: e4m3 × scale is exact in bf16 for scales of 2^-124 and up (bf16's
// subnormals end at 2^-133, e4m3's at 2^-9), NaN scales and e4m3 NaN codes (decoded apart by
// the SIMD kernels) excluded; and the groups' row slices must start on 128-row scale blocks.
bool wo_a_fp8_is_exact(const LinearWeight& wo_a, int64_t group_rows);

// The weight dequantized to bf16 (the reference's copy of wo_a), in huge-page memory.
HugeBuffer<uint16_t> bf16_copy(const LinearWeight& w);

}  // namespace strata::dsv4
