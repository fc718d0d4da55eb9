#include "models/deepseek_v4/architecture.h"

#include "io/safetensors.h"
#include "models/deepseek_v4/arch_config.h"
#include "models/deepseek_v4/make_model.h"
#include "models/deepseek_v4/model.h"
#include "models/deepseek_v4/presets.h"
#include "models/deepseek_v4/tensors.h"

namespace strata::dsv4 {

const models::Architecture& architecture() {
  static const models::Architecture a = [] {
    models::Architecture r;
    r.name = "deepseek_v4";
    r.model_types = {"deepseek_v4"};
    r.hf_classes = {"DeepseekV4ForCausalLM"};
    r.parse_config = [](const nlohmann::json& j, const std::string& where) {
      return std::make_unique<ArchConfig>(parse_config(j, where));
    };
    r.load = [](const std::string& dir) -> std::unique_ptr<models::Model> { return Model::load(dir); };
    r.presets = preset_names();
    r.preset_config = [](const std::string& p) -> nlohmann::json { return to_json(preset_config(p)); };
    r.make_model = [](const models::MakeModelRequest& q) {
      MakeModelOptions o;
      o.config = preset_config(q.preset);
      o.seed = q.seed;
      o.out_dir = q.out_dir;
      o.tokenizer_dir = q.tokenizer_dir;
      o.shard_bytes = q.shard_bytes;
      o.threads = q.threads;
      o.progress = q.progress;
      make_model(o);
      require_valid_checkpoint(o.config, SafetensorsCheckpoint::open_dir(q.out_dir), q.out_dir);
    };
    r.tokenizer = "deepseek-v3";
    return r;
  }();
  return a;
}

}  // namespace strata::dsv4
