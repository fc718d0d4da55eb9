// `strata inspect --model DIR | --config FILE | --preset NAME [--json]`: the model's own description
// (architecture, layer schedule, parameter counts by component, bytes by dtype), each optional
// config.json key with the value in force and whether the file or a default gave it, and for
// a checkpoint the result of the tensor check.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/error.h"
#include "dist/world.h"
#include "models/expert_parallel.h"
#include "core/human_units.h"
#include "io/safetensors.h"
#include "models/registry.h"

namespace strata::cli {
namespace {
using nlohmann::ordered_json;

AutoRegister reg([](CLI::App& app) {
  auto* c = app.add_subcommand("inspect", "describe a model: layer schedule, parameters, bytes, tensor check");
  static std::string model, config, preset;
  static bool as_json = false;
  static int ranks = 0;
  auto* m = c->add_option("--model", model, "checkpoint directory");
  auto* f = c->add_option("--config", config, "a config.json file (no weights needed)")->excludes(m);
  c->add_option("--preset", preset, "a named config (make-model's presets; deepseek-v3.2, glm5 ...)")
      ->excludes(m)
      ->excludes(f);
  c->add_flag("--json", as_json, "print one JSON object");
  c->add_option("--ranks", ranks,
                "with --model: what each of N expert-parallel ranks reads (default: the ranks of mpirun -np N)")
      ->check(CLI::Range(1, 4096));
  c->callback([] {
    if (model.empty() && config.empty() && preset.empty())
      throw Error("inspect needs --model DIR, --config FILE or --preset NAME");
    const auto cfg = !preset.empty() ? models::preset_model_config(preset)
                                     : models::load_config(model.empty() ? config : model);
    ordered_json j = cfg->describe();
    ordered_json optional = ordered_json::array();
    for (const auto& k : cfg->config_keys().optional())
      optional.push_back({{"key", k.key}, {"value", k.value}, {"source", k.from_file ? "file" : "default"}});
    j["optional_config_keys"] = optional;
    int rc = 0;
    if (!model.empty()) {
      auto ckpt = SafetensorsCheckpoint::open_dir(model);
      auto r = cfg->check_checkpoint(ckpt);
      j["checkpoint"] = {{"tensors", ckpt.size()}, {"bytes", ckpt.total_bytes()}, {"ok", r.ok()},
                         {"missing", r.missing}, {"mismatched", r.mismatched}, {"unexpected", r.unexpected}};
      if (!r.ok()) rc = 1;
      const int n = ranks > 0 ? ranks : dist::size();
      if (n > 1) {
        ordered_json shares = ordered_json::array();
        for (const auto& s : models::rank_shares(ckpt, n))
          shares.push_back({{"rank", s.rank}, {"first_expert", s.first_expert}, {"experts", s.experts}, {"bytes", s.bytes}});
        j["checkpoint"]["ranks"] = shares;
      }
    }
    if (as_json) {
      std::printf("%s\n", j.dump(2).c_str());
    } else {
      std::fputs(cfg->describe_text().c_str(), stdout);
      std::printf("optional config keys:\n");
      int width = 0;
      for (const auto& k : j["optional_config_keys"]) width = std::max(width, int(k["key"].get<std::string>().size()));
      for (const auto& k : j["optional_config_keys"]) {
        std::string v = k["value"].dump();
        if (v.size() > 40) v = v.substr(0, 37) + "...";  // a list of every layer's type: --json has it whole
        std::printf("  %-*s %-40s %s\n", width, k["key"].get<std::string>().c_str(), v.c_str(),
                    k["source"].get<std::string>().c_str());
      }
      if (j.contains("checkpoint")) {
        const auto& k = j["checkpoint"];
        std::printf("checkpoint: %zu tensors, %s: %s\n", k["tensors"].get<size_t>(),
                    human_bytes(k["bytes"].get<double>()).c_str(), k["ok"].get<bool>() ? "all expected tensors present" : "INVALID");
        for (auto& x : k["missing"]) std::printf("  missing %s\n", x.get<std::string>().c_str());
        for (auto& x : k["mismatched"]) std::printf("  mismatched %s\n", x.get<std::string>().c_str());
        if (!k["unexpected"].empty()) std::printf("  %zu tensors the model does not use\n", k["unexpected"].size());
        if (k.contains("ranks"))
          for (const auto& s : k["ranks"]) {
            const int64_t first = s["first_expert"].get<int64_t>(), count = s["experts"].get<int64_t>();
            std::printf("  rank %d: routed experts %lld-%lld (%lld), reads %s\n", s["rank"].get<int>(), (long long)first,
                        (long long)(first + count - 1), (long long)count, human_bytes(s["bytes"].get<double>()).c_str());
          }
      }
    }
    set_exit_code(rc);
  });
});
}  // namespace
}  // namespace strata::cli
