// `strata inspect --model DIR | --config FILE [--json]`: the model's own description
// (architecture, layer schedule, parameter counts by component, bytes by dtype), and for a
// checkpoint the result of the tensor check.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/error.h"
#include "core/human_units.h"
#include "io/safetensors.h"
#include "models/registry.h"

namespace strata::cli {
namespace {
using nlohmann::ordered_json;

AutoRegister reg([](CLI::App& app) {
  auto* c = app.add_subcommand("inspect", "describe a model: layer schedule, parameters, bytes, tensor check");
  static std::string model, config;
  static bool as_json = false;
  auto* m = c->add_option("--model", model, "checkpoint directory");
  c->add_option("--config", config, "a config.json file (no weights needed)")->excludes(m);
  c->add_flag("--json", as_json, "print one JSON object");
  c->callback([] {
    if (model.empty() && config.empty()) throw Error("inspect needs --model DIR or --config FILE");
    const std::string src = model.empty() ? config : model;
    const auto cfg = models::load_config(src);
    ordered_json j = cfg->describe();
    int rc = 0;
    if (!model.empty()) {
      auto ckpt = SafetensorsCheckpoint::open_dir(model);
      auto r = cfg->check_checkpoint(ckpt);
      j["checkpoint"] = {{"tensors", ckpt.size()}, {"bytes", ckpt.total_bytes()}, {"ok", r.ok()},
                         {"missing", r.missing}, {"mismatched", r.mismatched}, {"unexpected", r.unexpected}};
      if (!r.ok()) rc = 1;
    }
    if (as_json) {
      std::printf("%s\n", j.dump(2).c_str());
    } else {
      std::fputs(cfg->describe_text().c_str(), stdout);
      if (j.contains("checkpoint")) {
        const auto& k = j["checkpoint"];
        std::printf("checkpoint: %zu tensors, %s: %s\n", k["tensors"].get<size_t>(),
                    human_bytes(k["bytes"].get<double>()).c_str(), k["ok"].get<bool>() ? "all expected tensors present" : "INVALID");
        for (auto& x : k["missing"]) std::printf("  missing %s\n", x.get<std::string>().c_str());
        for (auto& x : k["mismatched"]) std::printf("  mismatched %s\n", x.get<std::string>().c_str());
        if (!k["unexpected"].empty()) std::printf("  %zu tensors the model does not use\n", k["unexpected"].size());
      }
    }
    set_exit_code(rc);
  });
});
}  // namespace
}  // namespace strata::cli
