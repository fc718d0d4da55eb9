// The OpenAI-compatible HTTP server on cpp-httplib: routes, API-key check, body limit, and
// the bridge between blocking HTTP handler threads and the engine's event callbacks.
//
// Each completion request is one Exchange: its engine requests (one per choice) push events
// into the Exchange's queue from the engine thread; the handler thread turns them into a JSON
// body or SSE chunks. A stream whose client has gone away (a failed write) cancels its engine
// requests at once, so their cache memory is freed before the next engine step.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "server/backend.h"
#include "server/metrics_text.h"
#include "server/openai_request.h"

namespace httplib {
class Server;
class DataSink;
struct Request;
struct Response;
}  // namespace httplib

namespace strata::server {

struct ResponseMeta;

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                    // 0 = any free port (see bound_port())
  std::string api_key;                // empty = no authentication
  size_t max_body_bytes = 8u << 20;   // larger bodies are answered 413
  int http_threads = 64;              // handler threads: bounds concurrent connections served
  ModelInfo model;
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

 private:
  struct Exchange;
  void install_routes();
  void handle_completion(Endpoint ep, const httplib::Request& req, httplib::Response& res);
  static bool stream_step(Exchange& ex, const ResponseMeta& meta, bool include_usage, size_t n,
                          httplib::DataSink& sink);

  Backend& backend_;
  ServerOptions opt_;
  std::unique_ptr<httplib::Server> http_;
  ServerMetrics metrics_;
  std::atomic<bool> shutting_down_{false};
  std::atomic<int> active_{0};
  int port_ = 0;
};

}  // namespace strata::server
