#include "models/gemma4/architecture.h"

#include "models/gemma4/arch_config.h"
#include "models/gemma4/make_model.h"
#include "models/gemma4/model.h"
#include "models/gemma4/presets.h"

namespace strata::gemma4 {

const models::Architecture& architecture() {
  static const models::Architecture a = [] {
    models::Architecture r;
    r.name = "gemma4";
    r.model_types = {"gemma4", "gemma4_unified", "gemma4_text", "gemma4_unified_text"};
    r.hf_classes = {"Gemma4ForConditionalGeneration", "Gemma4ForCausalLM", "Gemma4UnifiedForConditionalGeneration"};
    r.parse_config = [](const nlohmann::json& j, const std::string& where) {
      return std::make_unique<ArchConfig>(parse_config(j, where));
    };
    r.load = [](const std::string& dir) -> std::unique_ptr<models::Model> { return Model::load(dir); };
    r.presets = preset_names();
    r.preset_config = [](const std::string& p) -> nlohmann::json { return to_json(preset_config(p)); };
    r.make_model = make_model;
    r.tokenizer = "";  // no Gemma tokenizer is shipped: make-model --tokenizer DIR adds one
    return r;
  }();
  return a;
}

}  // namespace strata::gemma4
