// The tensors a DSA checkpoint holds, from its config, with the published names: DeepSeek-V3's
// layout (model.layers.N.self_attn.{q_a_proj, q_a_layernorm, q_b_proj, kv_a_proj_with_mqa,
// kv_a_layernorm, kv_b_proj, o_proj}, .self_attn.indexer.{wq_b, wk, k_norm, weights_proj},
// .mlp.{gate_proj, up_proj, down_proj} or .mlp.{gate, experts.E.*, shared_experts.*}) and the MTP
// layer model.layers.<num_hidden_layers> with enorm, hnorm, eh_proj and shared_head. FP8 linears
// are e4m3 `weight` + `weight_scale_inv` per 128x128 block (fp32 or e8m0; powers of two).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "models/dsa/config.h"
#include "models/model_config.h"

namespace strata {
class SafetensorsCheckpoint;
}

namespace strata::dsa {

enum class Part { embedding, head, attention, indexer, dense_mlp, router, routed_expert, shared_expert, norm, mtp_proj };
const char* part_name(Part p);

struct ExpectedTensor {
  std::string name;
  std::vector<DType> dtypes;  // the first is what make-model writes; any is accepted
  std::vector<int64_t> shape;
  Part part = Part::norm;
  int64_t layer = -1;         // -1: global; the MTP layer is num_hidden_layers
  bool fp8_weight = false;    // e4m3 codes with a weight_scale_inv beside them
  bool scale = false;         // a weight_scale_inv
  bool optional = false;      // the MTP layer's own copies of the embedding and the head
  int64_t numel() const {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
  }
  bool mtp(const Config& c) const { return layer >= c.num_hidden_layers; }
};

// Every tensor: embedding, main layers, final norm, head, then the MTP layer.
std::vector<ExpectedTensor> expected_tensors(const Config& c);
// Every required tensor present with an accepted dtype and the right shape, optional ones
// checked when present; FP8 block scales must be powers of two (the kernels' e8m0 scales).
models::CheckReport check_checkpoint(const Config& c, const SafetensorsCheckpoint& ckpt);
// Whether the checkpoint holds the MTP layer (published checkpoints may drop it).
bool has_mtp_tensors(const Config& c, const SafetensorsCheckpoint& ckpt);

}  // namespace strata::dsa
