// A completion or response request of `strata serve --journal`: every engine event of its
// choices, kept while it runs and for the journal's retention after, so that its answer can be
// rendered again from the start — for its own client, for one that reconnects to its stream
// with SSE's Last-Event-ID, or for one that fetches the finished response. Rendering is a
// function of the events alone, so a request resumed after a crash renders the same bytes.
//
// A completion's stream event ids (a response's are its sequence numbers, resumable_response.h):
// a chunk's id is the number of chunks sent so far for each choice, "k0.k1...". Choices
// interleave differently from run to run, but each choice's own chunks do not, so a reconnect
// skips exactly the chunks the client had, per choice. The usage chunk carries "usage" and
// [DONE] "done".
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "server/openai_response.h"

namespace strata::server {

struct ResumableRequest {
  ResponseMeta meta;
  size_t n = 1;  // choices per prompt
  bool stream = false, include_usage = false;
  std::vector<std::string> echo;  // per choice: completions' echoed prompt text
  uint64_t journal_seq = 0;
  std::string body, idempotency_key;  // the POST's body and Idempotency-Key header (may be empty)
  // POST /v1/responses: answered as a response object and its events (resumable_response.h);
  // `settings` as the response object repeats them.
  bool responses = false;
  ojson settings;

  // Cancelled by its client (DELETE /v1/requests/{id}): its cancelled choices end with
  // finish_reason "cancelled" instead of an error. Set under `mu`, with engine_ids.
  std::atomic<bool> cancelled{false};

  std::mutex mu;
  std::condition_variable cv;
  std::vector<uint64_t> engine_ids;  // its choices' engine requests, as submitted
  std::vector<std::vector<engine::Event>> events;  // per choice, in order
  std::vector<int64_t> tokens;                     // per choice: token events so far
  size_t finished = 0;
  std::chrono::steady_clock::time_point finished_at;

  // Engine thread: records the event; returns the index of its token among the choice's
  // tokens (-1 for an event without one) and whether the request has now finished.
  std::pair<int64_t, bool> add(size_t choice, const engine::Event& e);
  bool done();
  // Once done: whether a choice ended cancelled rather than finished.
  bool ended_by_cancel();
};

// Last-Event-ID: per-choice chunk counts (every chunk for "usage" and "done"); empty = none.
// A 400 ApiError when malformed.
inline constexpr int64_t kAfterUsage = INT64_MAX - 1, kAfterDone = INT64_MAX;
std::vector<int64_t> parse_last_event_id(const std::string& header, size_t choices);

// Renders a request's stream from the start, leaving out the chunks a client already had.
class StreamRenderer {
 public:
  StreamRenderer(ResumableRequest& r, const Tokenizer& tok, std::vector<int64_t> skip);
  // What is new since the last call, waiting up to `wait` for events; at the end the usage
  // chunk (when asked for) and [DONE].
  std::string step(std::chrono::milliseconds wait);
  bool done() const { return done_; }

 private:
  std::string id() const;
  ResumableRequest& r_;
  std::vector<ChoiceBuilder> choices_;
  std::vector<size_t> next_;     // per choice: events rendered
  std::vector<int64_t> sent_, skip_;
  std::vector<bool> started_;
  size_t finished_ = 0;
  int after_ = 0;  // the client had: 1 the usage chunk, 2 [DONE] too
  bool done_ = false;
};

// The non-streaming body, once the request has finished (waits for it). Throws ApiError for a
// choice that failed.
ojson render_response(ResumableRequest& r, const Tokenizer& tok);

}  // namespace strata::server
