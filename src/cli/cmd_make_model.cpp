// `strata make-model --preset NAME --seed S --out DIR`: a random checkpoint in the official
// DeepSeek-V4 layout, checked against the model's tensor list after writing.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "cli/progress.h"
#include "core/error.h"
#include "io/safetensors.h"
#include "models/deepseek_v4/make_model.h"
#include "models/deepseek_v4/presets.h"
#include "models/deepseek_v4/tensors.h"

namespace strata::cli {
namespace {

std::string default_tokenizer_dir() {
  const char* rel = "../shared/tokenizers/deepseek-v3";
  if (std::filesystem::exists(std::filesystem::path(rel) / "tokenizer.json")) return rel;
  return std::string(STRATA_DEFAULT_SHARED_DIR) + "/tokenizers/deepseek-v3";
}

AutoRegister reg([](CLI::App& app) {
  auto* c = app.add_subcommand("make-model", "write a random DeepSeek-V4 checkpoint in the official layout");
  static std::string preset, out, tokenizer;
  static uint64_t seed = 0;
  static int threads = 0;
  static double shard_mb = 0;
  c->add_option("--preset", preset, "flash-tiny, pro-tiny or flash-2l")->required();
  c->add_option("--seed", seed, "random seed (same seed, same bytes)");
  c->add_option("--out", out, "output directory")->required();
  c->add_option("--tokenizer", tokenizer, "directory with tokenizer.json to copy (default ../shared/tokenizers/deepseek-v3)");
  c->add_option("--threads", threads, "generator threads (default: all cores)");
  c->add_option("--shard-mb", shard_mb, "shard size in MB (default 32 MB for small models, 2 GB otherwise)");
  c->callback([] {
    dsv4::MakeModelOptions o;
    o.config = dsv4::preset_config(preset);
    o.seed = seed;
    o.out_dir = out;
    o.tokenizer_dir = tokenizer.empty() ? default_tokenizer_dir() : tokenizer;
    o.threads = threads;
    o.shard_bytes = uint64_t(shard_mb * 1e6);
    ProgressBar bar("make-model " + preset);
    o.progress = [&](uint64_t d, uint64_t t) { bar.update(d, t); };
    dsv4::make_model(o);
    bar.finish();
    auto ckpt = SafetensorsCheckpoint::open_dir(out);
    dsv4::require_valid_checkpoint(o.config, ckpt, out);
    std::printf("%s: %zu tensors in %zu shards, checkpoint check passed\n", out.c_str(), ckpt.size(), ckpt.files().size());
  });
});

}  // namespace
}  // namespace strata::cli
