// The OpenAI-compatible HTTP server on cpp-httplib: routes, API-key check, body limit, CORS
// (cors.h), an X-Request-Id and log lines per request (request_log.h), and the bridge between
// blocking HTTP handler threads and the engine's event callbacks.
//
// Each completion request is one Exchange: its engine requests (one per choice) push events
// into the Exchange's queue from the engine thread; the handler thread turns them into a JSON
// body or SSE chunks. A stream whose client has gone away (a failed write) cancels its engine
// requests at once, so their cache memory is freed before the next engine step.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cache/cache_spec.h"
#include "server/backend.h"
#include "server/cors.h"
#include "server/metrics_text.h"
#include "server/openai_request.h"
#include "server/request_registry.h"
#include "server/request_log.h"
#include "server/retry_after.h"

namespace httplib {
class Server;
class DataSink;
struct Request;
struct Response;
}  // namespace httplib

namespace strata::server {

class Journal;
struct JournalEntry;
struct ChoiceDelta;
class ResponseBuilder;
class ApiError;

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                    // 0 = any free port (see bound_port())
  std::string api_key;                // empty = no authentication
  size_t max_body_bytes = 8u << 20;   // larger bodies are answered 413
  int http_threads = 64;              // handler threads: bounds concurrent connections served
  ModelInfo model;
  cache::CacheLayout cache_layout;        // the engine's, per request: /v1/ledger's numbers
  std::vector<std::string> cors_origins;  // origins allowed to call from a browser, or "*"; none = CORS off
  bool metrics_public = false;            // /metrics without the API key (for a scraper)
  LogFormat log_format = LogFormat::text;  // the per-request log lines (request_log.h)
  RequestLog::Sink log_sink;               // where they go; default stderr
  // strata serve --journal: completions and responses are journaled, resumable after a crash
  // and fetchable again by id (resumable_request.h, resumable_response.h). Null: off.
  Journal* journal = nullptr;
};

class Server {
 public:
  Server(Backend& backend, ServerOptions options);
  ~Server();

  // Binds the listening socket; returns the port (useful with port 0). Throws Error.
  int bind();
  // Serves until stop(); call after bind().
  void serve();
  // New completion requests get 503 from now on; /health reports "shutting_down".
  void begin_shutdown() { shutting_down_ = true; }
  bool shutting_down() const { return shutting_down_; }
  // Completion requests still being answered.
  int active_requests() const { return active_; }
  // Stops listening and ends serve().
  void stop();
  // With a journal: resubmits every request it holds, unfinished or finished within its
  // retention, continuing from the journaled tokens, and restores the ones their clients
  // cancelled from their tokens without computing them; call before serve(). A request that
  // cannot be resumed or restored is reported on stderr and dropped. Returns the number resumed.
  size_t resume_journal();
  // Choices resume_journal() continued from a shutdown's snapshot instead of computing them
  // again from their prompts.
  size_t choices_from_snapshots() const { return from_snapshots_; }
  // With a journal: where the engine request `engine_id` (a journaled choice still running)
  // leaves its snapshot when a shutdown cancels it; "" for any other request.
  std::string shutdown_snapshot_path(uint64_t engine_id);

 private:
  struct Exchange;
  struct Trace;
  void install_routes();
  bool pre_route(const httplib::Request& req, httplib::Response& res);
  void log_request(const httplib::Request& req, const httplib::Response& res);
  std::shared_ptr<Trace> trace(const httplib::Request& req);
  // The id a request's log line and X-Request-Id name, and the journaled request it answered.
  void name_trace(const httplib::Request& req, const std::string& id, std::shared_ptr<ResumableRequest> rr = nullptr);
  void send_error(const httplib::Request& req, httplib::Response& res, const ApiError& e);
  ResponseMeta meta_for(const ApiRequest& r, const char* id_prefix) const;
  std::pair<std::shared_ptr<Exchange>, std::function<void(bool)>> start_exchange(const ApiRequest& r,
                                                                                 const ResponseMeta& meta,
                                                                                 const httplib::Request& req,
                                                                                 httplib::Response& res);
  static void wait_all(Exchange& ex,
                       const std::function<void(const engine::Event&, const ChoiceDelta&)>& on_delta = nullptr);
  void handle_completion(Endpoint ep, const httplib::Request& req, httplib::Response& res);
  void handle_responses(const httplib::Request& req, httplib::Response& res);
  static bool responses_stream_step(Exchange& ex, ResponseBuilder& b, httplib::DataSink& sink);
  // With --journal (journaled_requests.cpp):
  // `settings`: a POST /v1/responses's (ResponsesRequest::settings); null for chat and completions.
  void handle_journaled(Endpoint ep, const ApiRequest& r, const ResponseMeta& meta, const httplib::Request& req,
                        httplib::Response& res, const nlohmann::ordered_json* settings = nullptr);
  // Registers a new request; null when its Idempotency-Key is already taken (by `*existing`).
  std::shared_ptr<ResumableRequest> track(const ApiRequest& r, const ResponseMeta& meta, const std::string& body,
                                          const std::string& key, const nlohmann::ordered_json* settings,
                                          std::shared_ptr<ResumableRequest>* existing = nullptr);
  // What a client had of a request's stream, from its Last-Event-ID (serve_resumable's `skip`).
  static std::vector<int64_t> events_had(const ResumableRequest& rr, const std::string& last_event_id);
  // A POST with the Idempotency-Key of a known request is answered by that request.
  bool answer_known_key(const httplib::Request& req, httplib::Response& res);
  // GET /v1/requests/{id}[/stream].
  void answer_by_id(const httplib::Request& req, httplib::Response& res);
  // DELETE /v1/requests/{id}: cancels what still runs of it, answers once it has ended.
  void cancel_by_id(const httplib::Request& req, httplib::Response& res);
  // Cancels what still runs of a request and waits for its end; false (answered) when it did
  // not end in time.
  bool cancel_and_wait(ResumableRequest& rr, const httplib::Request& req, httplib::Response& res);
  // With --journal (journaled_responses.cpp): GET /v1/responses/{id}[?stream=true&starting_after=N]
  // and POST /v1/responses/{id}/cancel.
  void retrieve_response(const httplib::Request& req, httplib::Response& res);
  void cancel_response(const httplib::Request& req, httplib::Response& res);
  // Submits its choices: skip[c] tokens of choice c are in the journal already. A choice with
  // a snapshot (snapshots[c] set) continues from it; its journaled tokens' events are rebuilt
  // first (Backend::replay).
  void submit_resumable(const std::shared_ptr<ResumableRequest>& rr, std::vector<engine::Request> reqs,
                        const std::vector<int64_t>& skip,
                        std::vector<std::optional<engine::RequestSnapshot>> snapshots = {});
  // The file a shutdown's snapshot of journaled request `seq`'s choice `c` goes to.
  std::string snapshot_file(uint64_t seq, size_t c) const;
  void serve_resumable(const std::shared_ptr<ResumableRequest>& rr, bool stream, std::vector<int64_t> skip,
                       const httplib::Request& req, httplib::Response& res);
  // The stream a renderer (StreamRenderer, ResponseStreamRenderer) makes of the request.
  template <class Renderer>
  void serve_stream(const std::shared_ptr<ResumableRequest>& rr, std::shared_ptr<Renderer> renderer,
                    httplib::Response& res);
  // A journaled request its client cancelled, registered again with its events rebuilt from
  // its journaled tokens (reqs: its choices' engine requests).
  void restore_cancelled(const JournalEntry& e, const ApiRequest& r, const ResponseMeta& meta,
                         const std::string& body, const std::string& key, const nlohmann::ordered_json* settings,
                         std::vector<engine::Request> reqs);
  static bool stream_step(Exchange& ex, const ResponseMeta& meta, bool include_usage, size_t n,
                          httplib::DataSink& sink);

  Backend& backend_;
  ServerOptions opt_;
  std::unique_ptr<httplib::Server> http_;
  ServerMetrics metrics_;
  CorsPolicy cors_;
  RequestLog log_;
  RetryAfter retry_after_;
  // Per request, from routing to its log line; keyed by the request object, which lives on
  // its handler thread from start to end.
  std::mutex traces_mu_;
  std::unordered_map<const httplib::Request*, std::shared_ptr<Trace>> traces_;
  RequestRegistry resumable_;
  std::atomic<bool> shutting_down_{false};
  std::atomic<int> active_{0};
  size_t from_snapshots_ = 0;  // resume_journal's count
  int port_ = 0;
};

}  // namespace strata::server
