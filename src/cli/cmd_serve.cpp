// `strata serve --model DIR`: the OpenAI-compatible HTTP server (src/server) over the batching
// engine. SIGINT / SIGTERM shut down gracefully: new requests get 503, in-flight ones finish
// (up to --shutdown-timeout, then they are cancelled), then the process exits 0. A second
// signal cancels at once.
#include <csignal>
#include <pthread.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <thread>
#include <vector>

#include "cli/commands.h"
#include "cli/one_process.h"
#include "cli/numerics_option.h"
#include "cli/preload.h"
#include "core/error.h"
#include "core/process_stats.h"
#include "engine/engine.h"
#include "models/registry.h"
#include "server/cors.h"
#include "server/journal.h"
#include "server/server.h"
#include "text/chat_format.h"
#include "text/tokenizer.h"

namespace strata::cli {
namespace {

struct ServeOpts {
  std::string model, model_name, host = "127.0.0.1", api_key;
  int port = 8080, max_running = 16, http_threads = 0, threads = 0;
  size_t max_queue = 256, max_body_bytes = 8u << 20;
  int64_t max_context = 0, pool_bytes = 0;
  double shutdown_timeout = 30;
  bool speculative = false;
  int spec_tokens = -1;  // -1: not given
  std::string indexer_cache = "fp8";
  bool preload = false, mlock = false;
  std::vector<std::string> cors_origins;
  bool metrics_public = false;
  std::string log_format = "text";
  std::string numerics;
  std::string journal;
  int journal_sync_ms = 50;
  int journal_retain_s = 300;
};

class EngineBackend final : public server::Backend {
 public:
  explicit EngineBackend(engine::Engine& e) : e_(e) {}
  uint64_t submit(engine::Request r, engine::EventCallback cb) override { return e_.submit(std::move(r), std::move(cb)); }
  void cancel(uint64_t id) override { e_.cancel(id); }
  std::vector<engine::Event> replay(engine::Request r) override { return e_.replay(std::move(r)); }
  uint64_t import_snapshot(engine::RequestSnapshot snap, const std::string& source, engine::EventCallback cb) override {
    return e_.import_snapshot(std::move(snap), source, std::move(cb));
  }
  engine::EngineMetrics metrics() override { return e_.metrics(); }
  std::vector<engine::RequestInfo> requests() override { return e_.requests(); }

 private:
  engine::Engine& e_;
};

void run_serve(const ServeOpts& o) {
  require_one_process("serve");
  // Signals are taken by one thread (sigtimedwait below); every thread started from here on
  // inherits the mask. A client that disconnects must not kill the process with SIGPIPE.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  server::CorsPolicy{o.cors_origins};  // a bad origin is an error before the model loads
  select_numerics(o.numerics, "serve");
  const auto t_start = std::chrono::steady_clock::now();
  std::shared_ptr<const models::Model> model = models::load_model(o.model);
  // Read in (in 2 MB pages where the kernel allows), then pinned with --mlock.
  if (o.mlock || o.preload) preload_checkpoint(model->checkpoint(), o.model, 1e9, /*force=*/true);
  if (o.mlock) lock_checkpoint(model->checkpoint());
  auto tok = std::make_shared<const Tokenizer>(Tokenizer::load(o.model));
  // A model without a chat format still serves /v1/completions; chat requests are then 400s.
  std::unique_ptr<ChatFormat> chat_format;
  try {
    chat_format = load_chat_format(o.model, model->facts().model_type);
  } catch (const Error& e) {
    std::fprintf(stderr, "strata serve: no chat format, /v1/chat/completions is off: %s\n", e.what());
  }
  engine::EngineOptions eo;
  eo.max_running = o.max_running;
  eo.max_queue = o.max_queue;
  eo.max_context = o.max_context;
  eo.pool_bytes = o.pool_bytes;
  eo.threads = o.threads;
  eo.index_keys_fp4 = o.indexer_cache == "fp4";
  eo.spec_tokens = o.spec_tokens >= 0 ? o.spec_tokens
                   : o.speculative   ? int(std::max<int64_t>(1, model->facts().mtp_layers))
                                     : 0;
  engine::Engine eng(model, tok, eo);
  EngineBackend backend(eng);

  server::ServerOptions so;
  so.host = o.host;
  so.port = o.port;
  so.api_key = o.api_key;
  so.max_body_bytes = o.max_body_bytes;
  so.cors_origins = o.cors_origins;
  so.metrics_public = o.metrics_public;
  so.log_format = server::parse_log_format(o.log_format);
  // One handler thread per request the engine can hold, plus room for /metrics and /health.
  so.http_threads = o.http_threads > 0 ? o.http_threads : int(std::min<size_t>(o.max_queue + size_t(o.max_running), 1024)) + 8;
  so.model.id = o.model_name.empty() ? std::filesystem::path(o.model).filename().string() : o.model_name;
  if (so.model.id.empty()) so.model.id = std::filesystem::path(o.model).parent_path().filename().string();
  so.model.tokenizer = tok.get();
  so.model.chat_format = chat_format.get();
  so.model.max_context = eng.max_context();
  so.cache_layout = eng.cache_layout();
  so.model.vocab_size = std::min<int32_t>(tok->vocab_size(), int32_t(model->vocab_size()));
  std::unique_ptr<server::Journal> journal;
  if (!o.journal.empty()) {
    server::JournalOptions jo;
    jo.dir = o.journal;
    jo.sync_interval = std::chrono::milliseconds(o.journal_sync_ms);
    jo.retain = std::chrono::seconds(o.journal_retain_s);
    journal = std::make_unique<server::Journal>(jo);
    const auto& rec = journal->recovery();
    if (rec.bad_bytes > 0)
      std::fprintf(stderr, "strata serve: journal %s: truncated %lld bytes after byte %lld (%s)\n", journal->path().c_str(),
                   (long long)rec.bad_bytes, (long long)rec.good_bytes, rec.problem.c_str());
    so.journal = journal.get();
  }
  server::Server srv(backend, so);
  const int port = srv.bind();
  if (journal) {
    const size_t resumed = srv.resume_journal();
    std::fprintf(stderr, "strata serve: journal %s, fsync every %d ms: %zu requests resumed (%zu choices from snapshots)\n",
                 journal->path().c_str(), o.journal_sync_ms, resumed, srv.choices_from_snapshots());
  }
  std::fprintf(stderr, "strata serve: model %s, listening on http://%s:%d\n", so.model.id.c_str(), o.host.c_str(), port);
  std::fprintf(stderr, "strata serve: numerics %s\n", std::string(numerics_name(active_numerics())).c_str());
  if (!o.cors_origins.empty()) {
    std::string list;
    for (const auto& origin : o.cors_origins) list += (list.empty() ? "" : ", ") + origin;
    std::fprintf(stderr, "strata serve: CORS allows %s\n", list.c_str());
  }
  if (o.metrics_public && !o.api_key.empty()) std::fprintf(stderr, "strata serve: /metrics needs no API key\n");
  {
    // Start-up cost: pages of the checkpoint are paid for when touched (at once with
    // --preload / --mlock, else by the first requests).
    const ProcessStats ps = process_stats();
    std::fprintf(stderr, "strata serve: ready in %.2f s, %.0f MB resident, %lld minor + %lld major page faults%s\n",
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count(),
                 double(ps.resident_bytes) / 1e6, (long long)ps.minor_faults, (long long)ps.major_faults,
                 o.mlock ? " (checkpoint locked in memory)" : o.preload ? " (checkpoint preloaded)" : "");
  }

  std::atomic<bool> served{false};
  std::thread watcher([&] {
    const timespec tick{0, 100'000'000};
    auto next_signal = [&] { return sigtimedwait(&sigs, nullptr, &tick) > 0; };
    while (!served && !next_signal()) {
    }
    if (served) return;
    std::fprintf(stderr, "strata serve: shutting down (%d requests in flight)\n", srv.active_requests());
    srv.begin_shutdown();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(o.shutdown_timeout);
    bool cancelled = false;
    while (srv.active_requests() > 0) {
      if (!cancelled && (next_signal() || std::chrono::steady_clock::now() > deadline)) {
        std::fprintf(stderr, "strata serve: cancelling %d requests\n", srv.active_requests());
        // journaled ones leave snapshots, so that the next start continues them without
        // computing their tokens again
        if (journal) eng.shutdown_with_snapshots([&](uint64_t id) { return srv.shutdown_snapshot_path(id); });
        else eng.shutdown(/*drain=*/false);
        cancelled = true;
      } else if (cancelled) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
    srv.stop();
  });
  srv.serve();
  served = true;
  watcher.join();
  eng.shutdown(/*drain=*/false);
  std::fprintf(stderr, "strata serve: stopped\n");
}

AutoRegister reg([](CLI::App& app) {
  auto o = std::make_shared<ServeOpts>();
  auto* c = app.add_subcommand("serve", "OpenAI-compatible HTTP server (chat, completions, models, metrics)");
  c->add_option("--model", o->model, "model directory")->required();
  c->add_option("--model-name", o->model_name, "model id clients use (default: the directory name)");
  c->add_option("--host", o->host, "address to listen on")->capture_default_str();
  c->add_option("--port", o->port, "port to listen on; 0 = any free port (printed on stderr)")->capture_default_str();
  c->add_option("--api-key", o->api_key, "require 'Authorization: Bearer KEY' on every route but /health");
  c->add_option("--max-queue", o->max_queue, "waiting requests before 429")->capture_default_str();
  c->add_option("--max-running", o->max_running, "requests decoding at once")->capture_default_str();
  c->add_option("--max-body-bytes", o->max_body_bytes, "larger request bodies get 413")->capture_default_str();
  c->add_option("--max-context", o->max_context, "tokens per request, prompt + output (0 = the model's)");
  c->add_option("--pool-bytes", o->pool_bytes, "cache memory pool (0 = enough for max-running at max-context)");
  c->add_option("--threads", o->threads, "engine compute threads (0 = all cores)");
  c->add_flag("--preload", o->preload, "read every checkpoint page in before listening (first requests take no page faults)");
  c->add_flag("--mlock", o->mlock, "read the checkpoint in and lock it in memory (needs ulimit -l above its size)");
  c->add_option("--indexer-cache", o->indexer_cache, "indexer key storage: fp8 (132 B, default) or fp4 (68 B); same outputs")
      ->check(CLI::IsMember({"fp4", "fp8"}));
  c->add_flag("--speculative", o->speculative,
              "speculative decoding: the MTP block drafts the config's num_nextn_predict_layers tokens, verified in one pass");
  c->add_option("--spec-tokens", o->spec_tokens, "draft tokens per request and step at most (implies --speculative; 0 = off)")
      ->check(CLI::Range(0, 16));
  add_numerics_option(*c, o->numerics);
  c->add_option("--http-threads", o->http_threads, "HTTP handler threads (0 = max-queue + max-running + 8)");
  c->add_option("--shutdown-timeout", o->shutdown_timeout, "seconds to let requests finish after SIGINT/SIGTERM")
      ->capture_default_str();
  c->add_option("--cors-origin", o->cors_origins,
                "let web pages from ORIGIN (e.g. http://localhost:3000; repeatable; * = any) call the API from a "
                "browser; without it no CORS headers are sent and OPTIONS is 405")
      ->expected(1)
      ->take_all();
  c->add_flag("--metrics-public", o->metrics_public, "serve /metrics without the API key (the API still needs it)");
  c->add_option("--log-format", o->log_format, "one stderr line per request and per error: text, json or off")
      ->check(CLI::IsMember({"text", "json", "off"}))
      ->capture_default_str();
  c->add_option("--journal", o->journal,
                "journal every request's accepted tokens in DIR; after a crash, a restart with the same DIR resumes "
                "them (GET /v1/requests/ID, /v1/requests/ID/stream with Last-Event-ID)");
  c->add_option("--journal-sync-ms", o->journal_sync_ms, "journal: write and fsync accepted tokens every N ms")
      ->check(CLI::Range(1, 60000))
      ->capture_default_str();
  c->add_option("--journal-retain", o->journal_retain_s, "journal: seconds a finished request stays retrievable")
      ->check(CLI::Range(0, 86400))
      ->capture_default_str();
  c->callback([o] { run_serve(*o); });
});

}  // namespace
}  // namespace strata::cli
