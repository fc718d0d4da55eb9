// `strata make-model --preset NAME --seed S --out DIR`: a random checkpoint of any registered
// architecture's preset, in that architecture's official layout, checked against the model's
// tensor list after writing.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "cli/progress.h"
#include "core/error.h"
#include "io/safetensors.h"
#include "models/registry.h"

namespace strata::cli {
namespace {

std::string default_tokenizer_dir(const std::string& name) {
  const std::string rel = "../shared/tokenizers/" + name;
  if (std::filesystem::exists(std::filesystem::path(rel) / "tokenizer.json")) return rel;
  return std::string(STRATA_DEFAULT_SHARED_DIR) + "/tokenizers/" + name;
}

std::string preset_list() {
  std::string s;
  for (const auto& p : models::preset_names()) s += (s.empty() ? "" : ", ") + p;
  return s;
}

AutoRegister reg([](CLI::App& app) {
  auto* c = app.add_subcommand("make-model", "write a random checkpoint of a preset in its official layout");
  static std::string preset, out, tokenizer;
  static uint64_t seed = 0;
  static int threads = 0;
  static double shard_mb = 0;
  c->add_option("--preset", preset, preset_list())->required();
  c->add_option("--seed", seed, "random seed (same seed, same bytes)");
  c->add_option("--out", out, "output directory")->required();
  c->add_option("--tokenizer", tokenizer,
                "directory with tokenizer.json to copy (default: the preset's, from ../shared/tokenizers)");
  c->add_option("--threads", threads, "generator threads (default: all cores)");
  c->add_option("--shard-mb", shard_mb, "shard size in MB (default 32 MB for small models, 2 GB otherwise)");
  c->callback([] {
    const models::Architecture& arch = models::architecture_for_preset(preset);
    models::MakeModelRequest q;
    q.preset = preset;
    q.seed = seed;
    q.out_dir = out;
    // An architecture that ships no tokenizer writes the checkpoint without one unless asked.
    q.tokenizer_dir = !tokenizer.empty()       ? tokenizer
                      : arch.tokenizer.empty() ? std::string()
                                               : default_tokenizer_dir(arch.tokenizer);
    q.threads = threads;
    q.shard_bytes = uint64_t(shard_mb * 1e6);
    ProgressBar bar("make-model " + preset);
    q.progress = [&](uint64_t d, uint64_t t) { bar.update(d, t); };
    arch.make_model(q);  // checks the written checkpoint against the config
    bar.finish();
    auto ckpt = SafetensorsCheckpoint::open_dir(out);
    std::printf("%s: %zu tensors in %zu shards, checkpoint check passed\n", out.c_str(), ckpt.size(), ckpt.files().size());
  });
});

}  // namespace
}  // namespace strata::cli
