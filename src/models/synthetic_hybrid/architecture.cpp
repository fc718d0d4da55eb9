#include "models/synthetic_hybrid/architecture.h"

#include "models/synthetic_hybrid/arch_config.h"
#include "models/synthetic_hybrid/make_model.h"
#include "models/synthetic_hybrid/model.h"

namespace strata::hybrid {

const models::Architecture& architecture() {
  static const models::Architecture a = [] {
    models::Architecture r;
    r.name = "synthetic_hybrid";
    r.model_types = {"strata_hybrid"};
    r.hf_classes = {"StrataHybridForCausalLM"};
    r.parse_config = [](const nlohmann::json& j, const std::string& where) {
      return std::make_unique<ArchConfig>(parse_config(j, where));
    };
    r.load = [](const std::string& dir) -> std::unique_ptr<models::Model> { return Model::load(dir); };
    r.presets = preset_names();
    r.make_model = make_model;
    r.tokenizer = "qwen3";
    return r;
  }();
  return a;
}

}  // namespace strata::hybrid
