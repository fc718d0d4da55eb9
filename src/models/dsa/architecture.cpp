#include "models/dsa/architecture.h"

#include "core/error.h"
#include "io/json_file.h"
#include "io/safetensors.h"
#include "models/dsa/arch_config.h"
#include "models/dsa/make_model.h"
#include "models/dsa/presets.h"
#include "models/dsa/tensors.h"

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
    r.load = [](const std::string& dir) -> std::unique_ptr<models::Model> {
      const Config c = parse_config(read_json_file(dir + "/config.json"), dir + "/config.json");
      const models::CheckReport rep = check_checkpoint(c, SafetensorsCheckpoint::open_dir(dir));
      if (!rep.ok()) throw Error(dir + ": checkpoint does not match config.json: " + rep.summary());
      throw Error(dir + ": " + c.model_type +
                  " checkpoints load and check, but this build has no DSA forward pass yet (ledger, inspect and "
                  "make-model work)");
    };
    r.presets = preset_names();
    r.preset_config = [](const std::string& p) -> nlohmann::json { return to_json(preset_config(p)); };
    r.make_model = make_model;
    r.tokenizer = "deepseek-v3";
    return r;
  }();
  return a;
}

}  // namespace strata::dsa
