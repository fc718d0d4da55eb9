// Request snapshots (`/v1/requests/{id}/export` files, engine/request_snapshot.h): an untrusted
// file imported into a running engine, on one of three tiny checkpoints whose caches differ in
// kind: DeepSeek-V3.2 (MLA latents and indexer keys in blocks), Gemma 4 (sliding-window rings
// beside full layers) and Qwen3.5 (recurrent Gated DeltaNet state). (DeepSeek-V4's snapshots,
// 1.7 MB for flash-tiny, are too large to mutate quickly; the import path is the same code.) A bad file is a strata::Error;
// one that is accepted must run: the engine takes a step with the restored state (its caches,
// position, MTP progress, sampler and stop matcher), then the request is cancelled, and the
// engine must go on serving.
// Input: one byte choosing the checkpoint, then the file.
// With STRATA_FUZZ_WRITE_SEEDS=DIR set, initialization writes snapshots of live requests
// (waiting, decoding, seeded and greedy) into DIR: the seed corpus.
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/error.h"
#include "engine/engine.h"
#include "fuzz_input.h"
#include "models/registry.h"
#include "text/tokenizer.h"

namespace {
namespace fs = std::filesystem;
using strata::engine::Event;

const char* const kPresets[] = {"deepseek-v3.2-tiny", "gemma4-tiny", "qwen3.5-tiny"};

struct Fixture {
  std::string dir, file;
  std::vector<std::unique_ptr<strata::engine::Engine>> engines;
  ~Fixture() {
    engines.clear();
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};
Fixture* fixture = nullptr;

// Waits for a request's first token (or its end) and for its end.
struct Progress {
  std::mutex mu;
  std::condition_variable cv;
  int tokens = 0;
  bool done = false;
  strata::engine::EventCallback callback() {
    return [this](const Event& e) {
      std::lock_guard lk(mu);
      if (e.kind == strata::engine::EventKind::token) ++tokens;
      if (e.finish != strata::FinishReason::none || e.cancelled || !e.error.empty()) done = true;
      cv.notify_all();
    };
  }
  void wait_tokens(int n) {
    std::unique_lock lk(mu);
    cv.wait(lk, [&] { return tokens >= n || done; });
  }
  void wait_done() {
    std::unique_lock lk(mu);
    cv.wait(lk, [&] { return done; });
  }
};

void write_seeds(strata::engine::Engine& e, const strata::Tokenizer& tok, const std::string& out, int which) {
  fs::create_directories(out);
  int n = 0;
  for (double temperature : {0.0, 0.8}) {
    for (int wait : {0, 3}) {
      strata::engine::Request r;
      r.prompt = tok.encode("The quick brown fox jumps over the lazy dog, again and again.");
      r.sampling.temperature = temperature;
      r.sampling.seed = 7;
      r.sampling.max_tokens = 200;
      r.sampling.stop = {"zzz"};
      r.sampling.ignore_eos = true;  // the random checkpoints end early otherwise
      if (temperature > 0) r.sampling.logprobs = 2;
      Progress p;
      const uint64_t id = e.submit(r, p.callback());
      if (wait) p.wait_tokens(wait);
      const std::string file = out + "/" + kPresets[which] + "_" + std::to_string(n++);
      e.export_request(id, file + ".tmp");
      e.cancel(id);
      p.wait_done();
      std::ifstream in(file + ".tmp", std::ios::binary);
      std::ofstream seed(file, std::ios::binary);
      seed.put(char(which));
      seed << in.rdbuf();
      fs::remove(file + ".tmp");
    }
  }
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fixture = new Fixture;
  fixture->dir = (fs::temp_directory_path() / ("strata_fuzz_snapshot_" + std::to_string(::getpid()))).string();
  fixture->file = fixture->dir + "/input.snapshot";
  for (int which = 0; which < 3; ++which) {
    const auto& arch = strata::models::architecture_for_preset(kPresets[which]);
    strata::models::MakeModelRequest mk;
    mk.preset = kPresets[which];
    mk.seed = 1;
    mk.out_dir = fixture->dir + "/" + kPresets[which];
    if (!arch.tokenizer.empty()) mk.tokenizer_dir = std::string(STRATA_SHARED_DIR) + "/tokenizers/" + arch.tokenizer;
    mk.threads = 1;
    arch.make_model(mk);
    std::shared_ptr<const strata::models::Model> model = strata::models::load_model(mk.out_dir);
    auto tok = std::make_shared<const strata::Tokenizer>(strata::Tokenizer::load(mk.out_dir));
    strata::engine::EngineOptions o;
    o.max_context = 512;
    o.max_running = 2;
    o.threads = 1;
    fixture->engines.push_back(std::make_unique<strata::engine::Engine>(model, tok, o));
    if (const char* out = std::getenv("STRATA_FUZZ_WRITE_SEEDS")) write_seeds(*fixture->engines.back(), *tok, out, which);
  }
  std::atexit([] { delete fixture; });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strata::fuzz::Input in(data, size);
  strata::engine::Engine& engine = *fixture->engines[in.byte() % fixture->engines.size()];
  {
    const std::string_view file = in.rest();
    std::ofstream f(fixture->file, std::ios::binary | std::ios::trunc);
    f.write(file.data(), std::streamsize(file.size()));
  }
  Progress p;
  uint64_t id = 0;
  try {
    id = engine.import_request(fixture->file, p.callback());
  } catch (const strata::Error&) {
    return 0;
  }
  p.wait_tokens(1);
  engine.cancel(id);
  p.wait_done();
  return 0;
}
