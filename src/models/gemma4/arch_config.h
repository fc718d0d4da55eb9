// Gemma 4 as a models::ModelConfig: facts, caches (the ledger), tensors, parameters, decode traffic.
#pragma once
#include "models/gemma4/config.h"
#include "models/model_config.h"

namespace strata::gemma4 {

class ArchConfig final : public models::ModelConfig {
 public:
  explicit ArchConfig(Config c);
  const Config& config() const { return cfg_; }
  const models::ModelFacts& facts() const override { return facts_; }
  const models::ConfigKeys& config_keys() const override { return cfg_.keys; }
  cache::CacheLayout cache_layout(const models::CacheOptions& o = {}) const override {
    return gemma4::cache_layout(cfg_, o);
  }
  nlohmann::ordered_json describe() const override;
  std::string describe_text() const override;
  models::CheckReport check_checkpoint(const SafetensorsCheckpoint& ckpt) const override;
  models::DecodeTraffic decode_traffic(int64_t context) const override;
  double prefill_flops_per_token() const override;

 private:
  Config cfg_;
  models::ModelFacts facts_;
};

}  // namespace strata::gemma4
