#include "models/dsa/architecture.h"

#include "models/dsa/arch_config.h"
#include "models/dsa/make_model.h"
#include "models/dsa/model.h"
#include "models/dsa/presets.h"

namespace strata::dsa {

const models::Architecture& architecture() {
  static const models::Architecture a = [] {
    models::Architecture r;
    r.name = "dsa";
    r.model_types = {"deepseek_v32", "glm_moe_dsa"};
    r.hf_classes = {"DeepseekV32ForCausalLM", "GlmMoeDsaForCausalLM"};
    r.parse_config = [](const nlohmann::json& j, const std::string& where) {
      return std::make_unique<ArchConfig>(parse_config(j, where));
    };
    r.load = [](const std::string& dir) -> std::unique_ptr<models::Model> { return Model::load(dir); };
    r.presets = preset_names();
    r.preset_config = [](const std::string& p) -> nlohmann::json { return to_json(preset_config(p)); };
    r.make_model = make_model;
    r.tokenizer = "deepseek-v3";
    return r;
  }();
  return a;
}

}  // namespace strata::dsa
