#include "server/server.h"

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <ctime>
#include <deque>
#include <mutex>

#include "core/error.h"
#include "server/api_error.h"
#include "server/openai_response.h"

namespace strata::server {
namespace {

void send_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  res.set_content(dump_json(e.to_json()), "application/json");
}

// Routes become metric labels; anything else is "other" so a scanner cannot grow the label set.
std::string route_label(const std::string& path) {
  for (const char* r : {"/v1/chat/completions", "/v1/completions", "/v1/models", "/health", "/metrics"})
    if (path == r) return r;
  if (path.rfind("/v1/models/", 0) == 0) return "/v1/models/{id}";
  return "other";
}

bool authorized(const httplib::Request& req, const std::string& key) {
  const std::string auth = req.get_header_value("Authorization");
  if (auth == "Bearer " + key) return true;
  return req.get_header_value("x-api-key") == key;
}

}  // namespace

// One HTTP completion request: its choices' engine requests and the events they deliver.
struct Server::Exchange {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::pair<size_t, engine::Event>> events;  // (choice, event), filled on the engine thread
  std::vector<uint64_t> ids;                            // engine ids of the submitted choices
  std::vector<ChoiceBuilder> choices;
  std::vector<bool> started;  // a chunk was sent for the choice (the first carries the role)
  size_t finished = 0;
  bool released = false;  // the server is done with it (counted out of active_)

  // Waits up to `timeout` for events; returns them (possibly none).
  std::deque<std::pair<size_t, engine::Event>> take(std::chrono::milliseconds timeout) {
    std::unique_lock lk(mu);
    cv.wait_for(lk, timeout, [&] { return !events.empty(); });
    std::deque<std::pair<size_t, engine::Event>> out;
    out.swap(events);
    return out;
  }
};

Server::Server(Backend& backend, ServerOptions options)
    : backend_(backend), opt_(std::move(options)), http_(std::make_unique<httplib::Server>()) {
  const int threads = std::max(4, opt_.http_threads);
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(size_t(threads)); };
  http_->set_payload_max_length(opt_.max_body_bytes);
  http_->set_read_timeout(30, 0);
  http_->set_write_timeout(30, 0);
  install_routes();
}

Server::~Server() = default;

int Server::bind() {
  if (opt_.port == 0) port_ = http_->bind_to_any_port(opt_.host);
  else port_ = http_->bind_to_port(opt_.host, opt_.port) ? opt_.port : -1;
  if (port_ <= 0) throw Error("cannot listen on " + opt_.host + ":" + std::to_string(opt_.port));
  return port_;
}

void Server::serve() { http_->listen_after_bind(); }

void Server::stop() { http_->stop(); }

void Server::install_routes() {
  auto& s = *http_;
  s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (opt_.api_key.empty() || req.path == "/health" || authorized(req, opt_.api_key))
      return httplib::Server::HandlerResponse::Unhandled;
    send_error(res, unauthorized());
    return httplib::Server::HandlerResponse::Handled;
  });
  // httplib's own failures (413 body too large, 404 no route, 400 bad HTTP) in OpenAI's shape.
  s.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    if (res.status == 413) send_error(res, payload_too_large(opt_.max_body_bytes));
    else if (res.status == 404) send_error(res, ApiError(404, "No route for " + req.method + " " + req.path + ".", "invalid_request_error", "", "not_found"));
    else send_error(res, ApiError(res.status, "The request could not be processed.", res.status >= 500 ? "server_error" : "invalid_request_error"));
    return httplib::Server::HandlerResponse::Handled;
  }));
  s.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string msg = "internal error";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      msg = e.what();
    } catch (...) {
    }
    send_error(res, internal_error(msg));
  });
  s.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    metrics_.count_request(route_label(req.path), res.status);
  });

  s.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    res.status = shutting_down_ ? 503 : 200;
    res.set_content(shutting_down_ ? R"({"status":"shutting_down"})" : R"({"status":"ok"})", "application/json");
  });
  s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_.render(backend_.metrics()), "text/plain; version=0.0.4; charset=utf-8");
  });
  auto model_json = [this] {
    return ojson{{"id", opt_.model.id}, {"object", "model"}, {"created", 0}, {"owned_by", "strata"},
                 {"max_model_len", opt_.model.max_context}};
  };
  s.Get("/v1/models", [model_json](const httplib::Request&, httplib::Response& res) {
    res.set_content(dump_json({{"object", "list"}, {"data", ojson::array({model_json()})}}), "application/json");
  });
  s.Get(R"(/v1/models/(.+))", [this, model_json](const httplib::Request& req, httplib::Response& res) {
    if (req.matches[1] != opt_.model.id) return send_error(res, model_not_found(req.matches[1]));
    res.set_content(dump_json(model_json()), "application/json");
  });
  s.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
    handle_completion(Endpoint::chat, req, res);
  });
  s.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
    handle_completion(Endpoint::completions, req, res);
  });
}

void Server::handle_completion(Endpoint ep, const httplib::Request& req, httplib::Response& res) {
  ApiRequest r;
  try {
    if (shutting_down_) throw shutting_down_error();
    r = ep == Endpoint::chat ? parse_chat_request(req.body, opt_.model) : parse_completion_request(req.body, opt_.model);
  } catch (const ApiError& e) {
    return send_error(res, e);
  } catch (const std::exception& e) {  // e.g. the tokenizer rejecting something: still the client's input
    return send_error(res, bad_request(e.what()));
  }

  ResponseMeta meta;
  meta.id = new_id(ep == Endpoint::chat ? "chatcmpl-" : "cmpl-");
  meta.model = r.model;
  meta.created = int64_t(std::time(nullptr));
  meta.endpoint = ep;
  meta.chat_format = opt_.model.chat_format;
  meta.thinking = r.thinking;
  meta.top_logprobs = r.top_logprobs;

  auto ex = std::make_shared<Exchange>();
  for (size_t c = 0; c < r.choices(); ++c)
    ex->choices.emplace_back(*opt_.model.tokenizer, meta, c, r.echo ? r.prompt_texts[r.prompt_of(c)] : std::string());
  ex->started.assign(r.choices(), false);
  ++active_;
  auto release = [this, ex](bool cancel) {
    std::vector<uint64_t> ids;
    {
      std::lock_guard lk(ex->mu);
      if (ex->released) return;
      ex->released = true;
      if (cancel) ids = ex->ids;
    }
    for (uint64_t id : ids) backend_.cancel(id);  // finished ids are ignored by the engine
    --active_;
  };

  try {
    for (size_t c = 0; c < r.choices(); ++c) {
      engine::Request er;
      er.prompt = r.prompts[r.prompt_of(c)];
      er.sampling = r.sampling_for(c);
      std::weak_ptr<Exchange> wex = ex;
      uint64_t id = backend_.submit(std::move(er), [wex, c](const engine::Event& e) {
        if (auto x = wex.lock()) {
          std::lock_guard lk(x->mu);
          x->events.emplace_back(c, e);
          x->cv.notify_all();
        }
      });
      std::lock_guard lk(ex->mu);
      ex->ids.push_back(id);
    }
  } catch (const engine::QueueFull&) {
    release(true);
    return send_error(res, queue_full());
  } catch (const std::exception& e) {
    release(true);
    return send_error(res, shutting_down_ ? shutting_down_error() : bad_request(e.what()));
  }

  if (!r.stream) {
    while (ex->finished < ex->choices.size()) {
      for (auto& [c, e] : ex->take(std::chrono::milliseconds(200))) {
        ex->choices[c].add(e);
        if (ex->choices[c].finished()) ++ex->finished;
      }
    }
    release(false);
    int64_t prompt = 0, completion = 0, cached = 0;
    std::vector<ojson> choices;
    for (size_t c = 0; c < ex->choices.size(); ++c) {
      const auto& ch = ex->choices[c];
      if (!ch.error().empty())
        return send_error(res, ch.cancelled() && shutting_down_ ? shutting_down_error() : internal_error(ch.error()));
      if (c % size_t(r.n) == 0) prompt += ch.prompt_tokens(), cached += ch.cached_tokens();
      completion += ch.completion_tokens();
      choices.push_back(ch.choice_json());
    }
    res.set_content(dump_json(response_json(meta, choices, usage_json(prompt, completion, cached))), "application/json");
    return;
  }

  const bool include_usage = r.include_usage;
  const size_t n = r.n;
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [ex, meta, include_usage, n](size_t, httplib::DataSink& sink) {
        try {
          return stream_step(*ex, meta, include_usage, n, sink);
        } catch (const std::exception& e) {
          // Nothing may escape into httplib's writer thread; the client gets an error event.
          std::string out = sse_event(internal_error(e.what()).to_json()) + sse_done();
          sink.write(out.data(), out.size());
          sink.done();
          return true;
        }
      },
      [release](bool success) { release(!success); });
}

// One turn of a stream: waits for events (at most 0.5 s), writes their chunks; at the end the
// usage chunk and [DONE]. Returns false when the client has gone away.
bool Server::stream_step(Exchange& x, const ResponseMeta& meta, bool include_usage, size_t n, httplib::DataSink& sink) {
  auto evs = x.take(std::chrono::milliseconds(500));
  std::string out;
  for (auto& [c, e] : evs) {
    auto& ch = x.choices[c];
    ChoiceDelta d = ch.add(e);
    if (ch.finished()) ++x.finished;
    if (!ch.error().empty()) {
      out += sse_event(ApiError(500, ch.error(), "server_error").to_json());
      continue;
    }
    if (d.empty() && x.started[c]) continue;
    out += sse_event(chunk_json(meta, c, d, !x.started[c], include_usage));
    x.started[c] = true;
  }
  if (x.finished == x.choices.size()) {
    if (include_usage) {
      int64_t prompt = 0, completion = 0, cached = 0;
      for (size_t c = 0; c < x.choices.size(); ++c) {
        if (c % n == 0) prompt += x.choices[c].prompt_tokens(), cached += x.choices[c].cached_tokens();
        completion += x.choices[c].completion_tokens();
      }
      out += sse_event(usage_chunk_json(meta, usage_json(prompt, completion, cached)));
    }
    out += sse_done();
    if (!sink.write(out.data(), out.size())) return false;
    sink.done();
    return true;
  }
  // Nothing new: an SSE comment, so that a client that has gone away is noticed.
  if (out.empty()) out = ": keep-alive\n\n";
  return sink.write(out.data(), out.size());
}

}  // namespace strata::server
