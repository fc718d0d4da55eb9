// DeepSeek-V4 as a models::ModelConfig: the facts, caches, tensors, parameter counts and decode
// traffic of a parsed config.json (config.h), for the engine, `strata inspect`, `strata
// ledger` and `strata bench`.
#pragma once
#include "models/deepseek_v4/cache_layout.h"
#include "models/deepseek_v4/config.h"
#include "models/model_config.h"

namespace strata::dsv4 {

class ArchConfig final : public models::ModelConfig {
 public:
  explicit ArchConfig(Config c);
  const Config& config() const { return cfg_; }

  const models::ModelFacts& facts() const override { return facts_; }
  const models::ConfigKeys& config_keys() const override { return cfg_.keys; }
  cache::CacheLayout cache_layout(const models::CacheOptions& o = {}) const override;
  std::vector<models::LedgerVariant> ledger_variants(const models::CacheOptions& o) const override;
  int64_t workspace_bytes(int64_t max_context, int64_t parts) const override;
  nlohmann::ordered_json describe() const override;
  std::string describe_text() const override;
  models::CheckReport check_checkpoint(const SafetensorsCheckpoint& ckpt) const override;
  models::DecodeTraffic decode_traffic(int64_t context) const override;
  double prefill_flops_per_token() const override;

 private:
  Config cfg_;
  models::ModelFacts facts_;
};

// The layout options a generic request for caches means for V4.
CacheLayoutOptions layout_options(const models::CacheOptions& o);

}  // namespace strata::dsv4
