// The serving engine's public contract: requests in, token/text events out, many requests
// per forward step (continuous batching), one memory pool for every cache kind.
//
// Threading: submit(), cancel(), metrics() and shutdown() may be called from any thread.
// Events are delivered on the engine's thread (Request::report_accepted's from submit()), in
// order per request; a callback must not
// block (copy the event into the caller's queue and return). The last event of a request has
// finish != none (stop, length, cancelled, or error with a message).
//
// Determinism: a request's tokens depend only on the request (prompt, sampling params, seed),
// never on which other requests share its batch, on preemption, on prefix-cache hits or on
// the thread count.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cache/cache_spec.h"
#include "engine/finish_reason.h"
#include "engine/latency_histogram.h"
#include "engine/logprobs.h"
#include "engine/request_snapshot.h"
#include "engine/sampling_params.h"

namespace strata {
class Tokenizer;
namespace models {
class Model;
}
}  // namespace strata

namespace strata::engine {

struct Request {
  std::vector<int32_t> prompt;  // token ids (already chat-encoded and tokenized)
  SamplingParams sampling;      // validated by submit()
  uint64_t id = 0;              // caller's id; 0 = assign one
  int priority = 0;             // reserved; the queue is FIFO (fair) by arrival
  // Benchmarks only (forced acceptance): with speculation on, drafts are replaced by these
  // tokens (the request's expected output, e.g. its own greedy continuation).
  std::vector<int32_t> forced_drafts;
  // A resume (e.g. after a crash): the tokens this request had already generated, in order.
  // They become context (recomputed, or a prefix-cache hit), and the sampler, stop matcher and
  // detokenizer are advanced over them without events, so the request goes on exactly as if
  // it had never stopped. They must not finish it (submit() throws strata::Error).
  std::vector<int32_t> accepted;
  // Deliver the accepted tokens' events again (token and text, no logprobs: the logits were
  // not computed), from submit() on the caller's thread before any event of the engine's, so
  // that a caller can rebuild the whole answer.
  bool report_accepted = false;
};

enum class EventKind { token, finished };

struct Event {
  uint64_t request_id = 0;
  EventKind kind = EventKind::token;
  int32_t token = -1;                       // kind == token
  std::string text;                         // detokenized text made final by this event (stop strings removed)
  std::optional<SampledLogprobs> logprobs;  // when requested
  FinishReason finish = FinishReason::none; // set on the last event
  bool cancelled = false;                   // finished because of cancel() or shutdown (text: what was held back)
  std::string error;                        // finished because of an error (e.g. out of memory for this request)
  int64_t prompt_tokens = 0, generated_tokens = 0, cached_prompt_tokens = 0;  // usage, on the last event
  // Speculative decoding, on the last event: verification rounds, drafted and accepted tokens.
  int64_t spec_rounds = 0, spec_drafted = 0, spec_accepted = 0;
};

using EventCallback = std::function<void(const Event&)>;

struct EngineOptions {
  int64_t pool_bytes = 0;            // 0 = the ledger's need for max_running requests at max_context
  int64_t max_context = 0;           // 0 = the model's max_position_embeddings
  int max_running = 16;              // requests decoding at once
  int64_t max_batch_tokens = 512;    // per-step token budget (decode tokens + prefill chunks)
  size_t max_queue = 256;            // waiting requests; submit() beyond it throws QueueFull
  bool prefix_cache = true;
  int threads = 0;                   // 0 = all cores
  // Speculative decoding with the MTP block (speculative.h): up to spec_tokens drafts per
  // decoding request and step, verified in the same forward_batch; 0 = off. Outputs are
  // bitwise the same either way. spec_adaptive adapts each request's draft length to its
  // acceptance rate and to the number of decoding requests.
  int spec_tokens = 0;
  bool spec_adaptive = true;
  // Sparse-indexer keys stored as FP4 (68 B) instead of FP8 (132 B): same values, same outputs.
  bool index_keys_fp4 = false;
};

// Thrown by submit() when the waiting queue is full (the server answers 429).
class QueueFull : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct EngineMetrics {
  int64_t waiting = 0, running = 0, finished = 0, cancelled = 0, errored = 0, preempted = 0;
  int64_t prompt_tokens = 0, generated_tokens = 0;
  int64_t prefix_lookup_tokens = 0, prefix_hit_tokens = 0, recomputed_tokens = 0;
  // Speculative decoding: verification rounds, drafted and accepted tokens, tokens produced.
  int64_t spec_rounds = 0, spec_drafted = 0, spec_accepted = 0, spec_emitted = 0;
  int64_t pool_bytes_total = 0;
  int64_t pool_workspace_bytes = 0;  // the forward pass's working memory beside the caches (e.g. an indexer's)
  // Prefix checkpoints held in the pool: each a slot, and the blocks they reference (shared
  // with each other and with running requests, counted once).
  int64_t prefix_checkpoints = 0, prefix_blocks = 0;
  std::vector<std::pair<std::string, int64_t>> pool_bytes_by_kind;  // cache kind -> bytes in use
  LatencyHistogram ttft, itl;  // time to first token, between tokens: since start
};

// A waiting or running request as the server's introspection shows it (Engine::requests()).
struct RequestInfo {
  uint64_t id = 0;
  bool running = false;          // else waiting (queued, or preempted back to the queue)
  int64_t prompt_tokens = 0, generated_tokens = 0, cached_prompt_tokens = 0;
  int64_t max_tokens = 0;
  int64_t context_tokens = 0;    // tokens in its cache now
  int64_t cache_bytes = 0;       // pool blocks, slot and draft unit it holds (shared blocks count in each)
  double age_seconds = 0;        // since submit
  bool structured = false;       // decoding under a grammar
};

class Engine {
 public:
  Engine(std::shared_ptr<const models::Model> model, std::shared_ptr<const Tokenizer> tokenizer, EngineOptions options);
  ~Engine();  // shutdown(false)
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Validates and queues a request; returns its id. Throws strata::Error for invalid input
  // (empty prompt, out-of-vocab id, prompt + max_tokens beyond max_context, bad sampling
  // params) and QueueFull when the queue is full. Never blocks on the forward pass.
  uint64_t submit(Request r, EventCallback on_event);
  // The events a request delivered when it ran, from the tokens it generated (r.accepted),
  // without computing anything: each token's text, the finish of the token that ended it (the
  // last), or, when they stop short of an end, a cancelled last event releasing the held-back
  // text. No logprobs. Throws strata::Error as submit() does for invalid input, and when a
  // token before the last would have ended it.
  std::vector<Event> replay(Request r) const;
  // Cancels a waiting or running request: its cache is freed before the next step; its last
  // event has cancelled = true. Unknown or finished ids are ignored.
  void cancel(uint64_t request_id);
  EngineMetrics metrics();
  // Stops accepting requests; drain = finish running and waiting requests first, otherwise
  // cancel them. Returns when the engine thread has stopped.
  void shutdown(bool drain);
  // Where a request cancelled by a shutdown leaves its snapshot (export_request's file, taken
  // after its last step, so it holds every token its events carried); "" for none.
  using SnapshotPath = std::function<std::string(uint64_t request_id)>;
  // shutdown(false), first writing the snapshot of each request `path` names a file for. A
  // snapshot that cannot be written is reported on stderr; its request is cancelled as the others.
  void shutdown_with_snapshots(SnapshotPath path);

  // Writes the request's full state (every cache kind, position, tokens, sampler and stop
  // state) to `path`, taken between two steps; the request goes on. Blocks until written;
  // must not be called from an event callback. Throws strata::Error for an unknown id.
  void export_request(uint64_t request_id, const std::string& path);
  // Queues a request restored from export_request's file (this process or another, same
  // model): it continues exactly as the exported one would have. Returns its id (the
  // exported id unless that one is in use here). Throws strata::Error for a bad file.
  uint64_t import_request(const std::string& path, EventCallback on_event);
  // The same for a snapshot already read (`source`, its file, names it in errors).
  uint64_t import_snapshot(RequestSnapshot snap, const std::string& source, EventCallback on_event);

  const models::Model& model() const;
  const Tokenizer& tokenizer() const;
  int64_t max_context() const;
  // Every waiting and running request, by arrival (the running ones as of the last step).
  std::vector<RequestInfo> requests() const;
  // Every request's cache specs, as the pool allocates them (the options' indexer-key format
  // and draft slots included): what `strata ledger` counts for the same options.
  const cache::CacheLayout& cache_layout() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::engine
