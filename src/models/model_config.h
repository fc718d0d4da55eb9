// What a config.json alone tells about a model, for every architecture: the facts the engine
// and the server need, the caches each layer keeps (the ledger and the pool allocate from the
// same specs), the tensors a checkpoint must hold, parameter counts and the bytes a decode
// step reads. `strata inspect --config` and `strata ledger --config` need no weights.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cache/cache_spec.h"
#include "models/config_keys.h"

namespace strata {
class SafetensorsCheckpoint;
}

namespace strata::models {

struct ModelFacts {
  std::string model_type;      // config.json's (the text model's, for a multimodal checkpoint)
  std::vector<std::string> architectures;
  int64_t vocab_size = 0;      // rows of the embedding and the head
  int64_t max_positions = 0;   // longest sequence (max_position_embeddings)
  int64_t hidden_size = 0;
  int64_t layers = 0;          // main layers
  int64_t mtp_layers = 0;      // MTP blocks the config declares (the drafter)
  std::vector<int64_t> eos_token_ids;
  int64_t hidden_width = 0;    // floats per token of the hidden rows forward_batch hands out
};

// Per-request cache choices that change how a layer stores its state, never its values.
struct CacheOptions {
  bool fp4_index_keys = false;  // sparse-indexer keys as FP4 (68 B) instead of FP8 (132 B)
  bool include_mtp = false;     // the MTP block's caches (speculative decoding)
  int draft_tokens = 0;         // draft-slot kinds keep this many extra state copies (kind_policy.h)
};

// The checkpoint's tensors against the config: every problem collected, nothing computed.
struct CheckReport {
  std::vector<std::string> missing;     // "name (dtype [shape])"
  std::vector<std::string> mismatched;  // "name: dtype/shape found, expected"
  std::vector<std::string> unexpected;  // tensors the model does not use
  bool ok() const { return missing.empty() && mismatched.empty(); }
  std::string summary(size_t max_lines = 20) const;
};

// Bytes one decode step at batch 1 reads, as the forward pass stores things.
struct DecodeTraffic {
  double weights = 0, routed_experts = 0, caches = 0;
  double total() const { return weights + routed_experts + caches; }
};

// Another accounting of the same caches, from a source document (printed by `strata ledger`
// beside the pool's own figures).
struct LedgerVariant {
  std::string key;          // JSON key of its bytes per context
  std::string description;  // one line: what it counts differently
  cache::CacheLayout layout;  // the specs as that accounting counts them
};

class ModelConfig {
 public:
  virtual ~ModelConfig() = default;
  virtual const ModelFacts& facts() const = 0;
  // How config.json was read: each optional key's value in force and its source.
  virtual const ConfigKeys& config_keys() const = 0;

  // Every layer's cache specs (main layers, then the MTP block's with o.include_mtp).
  virtual cache::CacheLayout cache_layout(const CacheOptions& o = {}) const = 0;
  virtual std::vector<LedgerVariant> ledger_variants(const CacheOptions& o) const { return {}; }
  // The forward pass's working memory beside the caches at contexts up to max_context with
  // `parts` threads (counted by the engine's pool as its workspace).
  virtual int64_t workspace_bytes(int64_t max_context, int64_t parts) const { return 0; }

  // `strata inspect`: {"model_type", "architecture", "schedule", "parameters", "bytes", ...}
  // and the same as text.
  virtual nlohmann::ordered_json describe() const = 0;
  virtual std::string describe_text() const = 0;
  virtual CheckReport check_checkpoint(const SafetensorsCheckpoint& ckpt) const = 0;

  // `strata bench`: bytes a decode step reads at `context` tokens, and FLOPs per prefill token.
  virtual DecodeTraffic decode_traffic(int64_t context) const = 0;
  virtual double prefill_flops_per_token() const = 0;
};

}  // namespace strata::models
