#include "models/qwen3_5/architecture.h"

#include "models/qwen3_5/arch_config.h"
#include "models/qwen3_5/make_model.h"
#include "models/qwen3_5/model.h"

namespace strata::qwen35 {

const models::Architecture& architecture() {
  static const models::Architecture a = [] {
    models::Architecture r;
    r.name = "qwen3_5";
    r.model_types = {"qwen3_5", "qwen3_5_moe", "qwen3_5_text", "qwen3_5_moe_text"};
    r.hf_classes = {"Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration", "Qwen3_5ForCausalLM",
                    "Qwen3_5MoeForCausalLM"};
    r.parse_config = [](const nlohmann::json& j, const std::string& where) {
      return std::make_unique<ArchConfig>(parse_config(j, where));
    };
    r.load = [](const std::string& dir) -> std::unique_ptr<models::Model> { return Model::load(dir); };
    r.presets = preset_names();
    r.preset_config = [](const std::string& p) -> nlohmann::json { return to_json(preset_config(p)); };
    r.make_model = make_model;
    r.tokenizer = "qwen3";
    return r;
  }();
  return a;
}

}  // namespace strata::qwen35
