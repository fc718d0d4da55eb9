#include "server/server.h"

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <ctime>
#include <deque>
#include <mutex>
#include <optional>

#include "core/error.h"
#include "core/numerics.h"
#include "server/api_error.h"
#include "server/journal.h"
#include "server/ledger_endpoint.h"
#include "server/openai_response.h"
#include "server/requests_endpoint.h"
#include "server/responses_output.h"
#include "server/responses_request.h"
#include "server/resumable_request.h"
#include "server/tokenize_endpoint.h"
#include "server/web_chat_page.h"
#include "text/tokenizer.h"

namespace strata::server {
namespace {

// Routes become metric labels; anything else is "other" so a scanner cannot grow the label set.
std::string route_label(const std::string& path) {
  for (const char* r : {"/v1/chat/completions", "/v1/completions", "/v1/responses", "/v1/models", "/health",
                        "/metrics", "/tokenize", "/detokenize", "/requests", "/", "/v1/ledger"})
    if (path == r) return r;
  if (path.rfind("/v1/models/", 0) == 0) return "/v1/models/{id}";
  if (path.rfind("/v1/requests/", 0) == 0) return "/v1/requests/{id}";
  if (path.rfind("/v1/responses/", 0) == 0)
    return path.size() > 7 && path.compare(path.size() - 7, 7, "/cancel") == 0 ? "/v1/responses/{id}/cancel"
                                                                             : "/v1/responses/{id}";
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
  // Handler thread only:
  std::optional<std::chrono::steady_clock::time_point> first_token;
  std::vector<std::string> stream_errors;  // engine errors sent as SSE error events
  bool done = false;                       // the whole answer was written

  // Waits up to `timeout` for events; returns them (possibly none).
  std::deque<std::pair<size_t, engine::Event>> take(std::chrono::milliseconds timeout) {
    std::unique_lock lk(mu);
    cv.wait_for(lk, timeout, [&] { return !events.empty(); });
    std::deque<std::pair<size_t, engine::Event>> out;
    out.swap(events);
    return out;
  }
};

// What a request's log line needs beyond the HTTP request and response.
struct Server::Trace {
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  std::string id = new_id("req-");       // a completion's own id once it has one
  std::shared_ptr<Exchange> ex;          // completions that reached the engine
  std::shared_ptr<ResumableRequest> rr;  // with --journal: the request answered
  size_t n = 1;                          // choices per prompt
  std::optional<ApiError> error;         // the error answered
};

Server::Server(Backend& backend, ServerOptions options)
    : backend_(backend), opt_(std::move(options)), http_(std::make_unique<httplib::Server>()),
      cors_(opt_.cors_origins), log_(opt_.log_format, opt_.log_sink) {
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
    return pre_route(req, res) ? httplib::Server::HandlerResponse::Handled : httplib::Server::HandlerResponse::Unhandled;
  });
  // Every answer, errors included: its id and, for an allowed Origin, the CORS headers.
  s.set_post_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    res.set_header("X-Request-Id", trace(req)->id);
    if (!res.has_header("Access-Control-Allow-Origin"))  // a preflight has its own
      for (auto& [k, v] : cors_.response_headers(req.get_header_value("Origin"))) res.set_header(k, v);
  });
  // httplib's own failures (413 body too large, 404 no route, 400 bad HTTP) in OpenAI's shape.
  s.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    if (res.status == 413) send_error(req, res, payload_too_large(opt_.max_body_bytes));
    else if (res.status == 404) send_error(req, res, ApiError(404, "No route for " + req.method + " " + req.path + ".", "invalid_request_error", "", "not_found"));
    else send_error(req, res, ApiError(res.status, "The request could not be processed.", res.status >= 500 ? "server_error" : "invalid_request_error"));
    return httplib::Server::HandlerResponse::Handled;
  }));
  s.set_exception_handler([this](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
    std::string msg = "internal error";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      msg = e.what();
    } catch (...) {
    }
    send_error(req, res, internal_error(msg));
  });
  s.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    metrics_.count_request(route_label(req.path), res.status);
    log_request(req, res);
  });

  s.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    res.status = shutting_down_ ? 503 : 200;
    res.set_content(shutting_down_ ? R"({"status":"shutting_down"})" : R"({"status":"ok"})", "application/json");
  });
  s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    std::string text = metrics_.render(backend_.metrics());
    if (opt_.journal) write_journal_metrics(text, opt_.journal->stats());
    res.set_content(text, "text/plain; version=0.0.4; charset=utf-8");
  });
  // "numerics": the process's profile (core/numerics.h); OpenAI clients ignore fields they do not know.
  auto model_json = [this] {
    return ojson{{"id", opt_.model.id}, {"object", "model"}, {"created", 0}, {"owned_by", "strata"},
                 {"max_model_len", opt_.model.max_context}, {"numerics", std::string(numerics_name(active_numerics()))}};
  };
  s.Get("/v1/models", [model_json](const httplib::Request&, httplib::Response& res) {
    res.set_content(dump_json({{"object", "list"}, {"data", ojson::array({model_json()})}}), "application/json");
  });
  s.Get(R"(/v1/models/(.+))", [this, model_json](const httplib::Request& req, httplib::Response& res) {
    if (req.matches[1] != opt_.model.id) return send_error(req, res, model_not_found(req.matches[1]));
    res.set_content(dump_json(model_json()), "application/json");
  });
  s.Get("/v1/ledger", [this](const httplib::Request& req, httplib::Response& res) {
    try {
      std::optional<int64_t> at;
      if (req.has_param("context")) at = parse_ledger_context(req.get_param_value("context"), opt_.model.max_context);
      res.set_content(dump_json(ledger_json(opt_.model.id, opt_.cache_layout, opt_.model.max_context, at)),
                      "application/json");
    } catch (const ApiError& e) {
      send_error(req, res, e);
    }
  });
  // The web chat: a static page that holds no secret, so it is served without the API key (it
  // asks for the key and sends it on the API calls, which still need it).
  s.Get("/", [](const httplib::Request&, httplib::Response& res) {
    for (auto& [k, v] : web_chat_headers()) res.set_header(k, v);
    res.set_content(std::string(web_chat_page()), "text/html; charset=utf-8");
  });
  s.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
    handle_completion(Endpoint::chat, req, res);
  });
  s.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
    handle_completion(Endpoint::completions, req, res);
  });
  s.Post("/v1/responses", [this](const httplib::Request& req, httplib::Response& res) {
    handle_responses(req, res);
  });
  auto tokenizer_route = [this](auto respond) {
    return [this, respond](const httplib::Request& req, httplib::Response& res) {
      try {
        res.set_content(dump_json(respond(req.body, opt_.model)), "application/json");
      } catch (const ApiError& e) {
        send_error(req, res, e);
      } catch (const std::exception& e) {
        send_error(req, res, bad_request(e.what()));
      }
    };
  };
  s.Post("/tokenize", tokenizer_route(tokenize_response));
  s.Post("/detokenize", tokenizer_route(detokenize_response));
  // With --journal: a request's finished response, or the rest of its stream from Last-Event-ID.
  s.Get(R"(/v1/requests/([A-Za-z0-9_-]+)(/stream)?)", [this](const httplib::Request& req, httplib::Response& res) {
    answer_by_id(req, res);
  });
  s.Delete(R"(/v1/requests/([A-Za-z0-9_-]+))", [this](const httplib::Request& req, httplib::Response& res) {
    cancel_by_id(req, res);
  });
  // With --journal: a response by its id, as OpenAI's API retrieves and cancels a stored one.
  s.Get(R"(/v1/responses/([A-Za-z0-9_-]+))", [this](const httplib::Request& req, httplib::Response& res) {
    retrieve_response(req, res);
  });
  s.Post(R"(/v1/responses/([A-Za-z0-9_-]+)/cancel)", [this](const httplib::Request& req, httplib::Response& res) {
    cancel_response(req, res);
  });
  // Introspection: what the engine is running and what waits, with the cache each request holds.
  s.Get("/requests", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(dump_json(requests_json(backend_.requests())), "application/json");
  });
}

std::shared_ptr<Server::Trace> Server::trace(const httplib::Request& req) {
  std::lock_guard lk(traces_mu_);
  auto& t = traces_[&req];
  if (!t) t = std::make_shared<Trace>();  // a request httplib answered before routing (413)
  return t;
}

void Server::name_trace(const httplib::Request& req, const std::string& id, std::shared_ptr<ResumableRequest> rr) {
  auto t = trace(req);
  t->id = id;
  if (rr) t->rr = std::move(rr);
}

// Every error answer goes through here, so that its log line has the message (by the time the
// log line is written the body may be compressed).
void Server::send_error(const httplib::Request& req, httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  res.set_content(dump_json(e.to_json()), "application/json");
  trace(req)->error = e;
}

// Before any route: a fresh trace, CORS preflights (never behind the API key: browsers send
// none with them), then the API key. Returns true when the request has been answered.
bool Server::pre_route(const httplib::Request& req, httplib::Response& res) {
  {
    std::lock_guard lk(traces_mu_);
    traces_[&req] = std::make_shared<Trace>();  // the same address may have served an earlier request
  }
  if (req.method == "OPTIONS") {
    if (!cors_.enabled()) {
      res.set_header("Allow", "GET, POST, DELETE");
      send_error(req, res, ApiError(405, "OPTIONS is not served: CORS is off (start the server with --cors-origin ORIGIN).",
                               "invalid_request_error", "", "method_not_allowed"));
      return true;
    }
    const std::string origin = req.get_header_value("Origin");
    if (!origin.empty() && !cors_.allows(origin)) {
      send_error(req, res, ApiError(403, "Origin " + origin + " is not allowed by this server's --cors-origin list.",
                               "invalid_request_error", "", "origin_not_allowed"));
      return true;
    }
    res.status = 204;
    res.set_header("Allow", "GET, POST, DELETE, OPTIONS");
    for (auto& [k, v] : cors_.preflight_headers(origin, req.get_header_value("Access-Control-Request-Headers"),
                                                req.get_header_value("Access-Control-Request-Private-Network") == "true"))
      res.set_header(k, v);
    return true;
  }
  const bool open = opt_.api_key.empty() || req.path == "/health" || (req.method == "GET" && req.path == "/") ||
                    (opt_.metrics_public && req.path == "/metrics");
  if (open || authorized(req, opt_.api_key)) return false;
  send_error(req, res, unauthorized());
  return true;
}

void Server::log_request(const httplib::Request& req, const httplib::Response& res) {
  std::shared_ptr<Trace> t;
  {
    std::lock_guard lk(traces_mu_);
    auto it = traces_.find(&req);
    if (it != traces_.end()) t = std::move(it->second), traces_.erase(it);
  }
  if (!t) t = std::make_shared<Trace>();
  const auto now = std::chrono::steady_clock::now();
  auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
  RequestRecord r;
  r.id = t->id;
  r.method = req.method;
  r.path = req.path;
  r.status = res.status;
  r.total_ms = ms(now - t->start);
  if (t->ex) {
    const Exchange& x = *t->ex;
    int64_t prompt = 0, completion = 0, cached = 0;
    bool clean = true, cancelled = false;
    for (size_t c = 0; c < x.choices.size(); ++c) {
      const auto& ch = x.choices[c];
      if (c % t->n == 0) prompt += ch.prompt_tokens(), cached += ch.cached_tokens();
      completion += ch.completion_tokens();
      if (const char* f = ch.finish_reason(); f && r.finish.find(f) == std::string::npos)
        r.finish += (r.finish.empty() ? "" : ",") + std::string(f);
      clean = clean && ch.finished() && ch.error().empty();
      cancelled = cancelled || ch.cancelled() || !ch.finished();
    }
    r.prompt_tokens = prompt;
    r.completion_tokens = completion;
    r.cached_tokens = cached;
    if (x.first_token) r.ttft_ms = ms(*x.first_token - t->start);
    r.outcome = clean && x.done && res.status == 200 ? "ok" : cancelled && !x.done ? "cancelled" : "error";
    for (const auto& e : x.stream_errors)
      log_.error({r.id, r.method, r.path, 500, "server_error", "", "", e});
  } else if (t->rr) {
    // A journaled request: its figures as of this answer's end (its client may have gone away
    // while it runs on: "cancelled" here, as the client is concerned).
    ResumableRequest& x = *t->rr;
    std::lock_guard lk(x.mu);
    int64_t prompt = 0, completion = 0, cached = 0;
    for (size_t c = 0; c < x.events.size(); ++c) {
      if (x.events[c].empty()) continue;
      const engine::Event& e = x.events[c].back();
      if (c % x.n == 0) prompt += e.prompt_tokens, cached += e.cached_prompt_tokens;
      completion += e.generated_tokens;
      if (const char* f = finish_reason_name(e.finish); e.finish != FinishReason::none && r.finish.find(f) == std::string::npos)
        r.finish += (r.finish.empty() ? "" : ",") + std::string(f);
    }
    r.prompt_tokens = prompt;
    r.completion_tokens = completion;
    r.cached_tokens = cached;
    bool clean = x.finished == x.events.size();
    for (const auto& evs : x.events) clean = clean && !evs.empty() && evs.back().error.empty() && !evs.back().cancelled;
    r.outcome = res.status != 200                              ? "error"
                : clean                                        ? "ok"
                : x.finished < x.events.size() || x.cancelled ? "cancelled"
                                                               : "error";
  } else if (req.method == "POST" && (req.path == "/v1/chat/completions" || req.path == "/v1/completions" ||
                                      req.path == "/v1/responses")) {
    r.outcome = "error";
  }
  if (res.status >= 400) {
    ErrorRecord e{r.id, r.method, r.path, res.status, "", "", "", "HTTP " + std::to_string(res.status)};
    if (t->error) {
      e.message = t->error->what();
      e.type = t->error->type;
      e.code = t->error->code;
      e.param = t->error->param;
    }
    log_.error(e);
  }
  log_.request(r);
}

ResponseMeta Server::meta_for(const ApiRequest& r, const char* id_prefix) const {
  ResponseMeta meta;
  meta.id = new_id(id_prefix);
  meta.model = r.model;
  meta.created = int64_t(std::time(nullptr));
  meta.endpoint = r.endpoint;
  meta.chat_format = opt_.model.chat_format;
  meta.thinking = r.thinking;
  meta.top_logprobs = r.top_logprobs;
  return meta;
}

// Submits a parsed request's choices; returns its Exchange and the function that releases it
// (true: cancel what still runs), or no Exchange when the request was answered with an error.
std::pair<std::shared_ptr<Server::Exchange>, std::function<void(bool)>> Server::start_exchange(
    const ApiRequest& r, const ResponseMeta& meta, const httplib::Request& req, httplib::Response& res) {
  const std::shared_ptr<Trace> tr = trace(req);
  auto ex = std::make_shared<Exchange>();
  tr->id = meta.id;
  tr->ex = ex;
  tr->n = size_t(r.n);
  for (size_t c = 0; c < r.choices(); ++c)
    ex->choices.emplace_back(*opt_.model.tokenizer, meta, c, r.echo ? r.prompt_texts[r.prompt_of(c)] : std::string());
  ex->started.assign(r.choices(), false);
  ++active_;
  auto release = [this, ex](bool cancel) {
    std::vector<uint64_t> ids;
    bool submitted = false;
    {
      std::lock_guard lk(ex->mu);
      if (ex->released) return;
      ex->released = true;
      submitted = !ex->ids.empty();
      if (cancel) ids = ex->ids;
    }
    for (uint64_t id : ids) backend_.cancel(id);  // finished ids are ignored by the engine
    if (submitted) retry_after_.finished();  // requests left the engine's queue and batch
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
    res.set_header("Retry-After", std::to_string(retry_after_.seconds()));
    send_error(req, res, queue_full());
    return {};
  } catch (const std::exception& e) {
    release(true);
    send_error(req, res, shutting_down_ ? shutting_down_error() : bad_request(e.what()));
    return {};
  }
  return {ex, release};
}

// A non-streaming answer: waits until every choice has finished, each event's delta to `on_delta`.
void Server::wait_all(Exchange& x, const std::function<void(const engine::Event&, const ChoiceDelta&)>& on_delta) {
  while (x.finished < x.choices.size()) {
    for (auto& [c, e] : x.take(std::chrono::milliseconds(200))) {
      if (!x.first_token && e.token >= 0) x.first_token = std::chrono::steady_clock::now();
      ChoiceDelta d = x.choices[c].add(e);
      if (on_delta) on_delta(e, d);
      if (x.choices[c].finished()) ++x.finished;
    }
  }
}

void Server::handle_completion(Endpoint ep, const httplib::Request& req, httplib::Response& res) {
  if (opt_.journal && answer_known_key(req, res)) return;
  ApiRequest r;
  try {
    if (shutting_down_) throw shutting_down_error();
    r = ep == Endpoint::chat ? parse_chat_request(req.body, opt_.model) : parse_completion_request(req.body, opt_.model);
  } catch (const ApiError& e) {
    return send_error(req, res, e);
  } catch (const std::exception& e) {  // e.g. the tokenizer rejecting something: still the client's input
    return send_error(req, res, bad_request(e.what()));
  }
  const ResponseMeta meta = meta_for(r, ep == Endpoint::chat ? "chatcmpl-" : "cmpl-");
  if (opt_.journal) return handle_journaled(ep, r, meta, req, res);
  // Named, not a structured binding: the lambdas below capture them (clang 14 cannot).
  auto started = start_exchange(r, meta, req, res);
  auto ex = std::move(started.first);
  auto release = std::move(started.second);
  if (!ex) return;

  if (!r.stream) {
    wait_all(*ex);
    release(false);
    int64_t prompt = 0, completion = 0, cached = 0;
    std::vector<ojson> choices;
    for (size_t c = 0; c < ex->choices.size(); ++c) {
      const auto& ch = ex->choices[c];
      if (!ch.error().empty())
        return send_error(req, res, ch.cancelled() && shutting_down_ ? shutting_down_error() : internal_error(ch.error()));
      if (c % size_t(r.n) == 0) prompt += ch.prompt_tokens(), cached += ch.cached_tokens();
      completion += ch.completion_tokens();
      choices.push_back(ch.choice_json());
    }
    res.set_content(dump_json(response_json(meta, choices, usage_json(prompt, completion, cached))), "application/json");
    ex->done = true;
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
          ex->stream_errors.push_back(e.what());
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
    if (!x.first_token && e.token >= 0) x.first_token = std::chrono::steady_clock::now();
    auto& ch = x.choices[c];
    ChoiceDelta d = ch.add(e);
    if (ch.finished()) ++x.finished;
    if (!ch.error().empty()) {
      out += sse_event(ApiError(500, ch.error(), "server_error").to_json());
      x.stream_errors.push_back(ch.error());
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
    x.done = true;
    return true;
  }
  // Nothing new: an SSE comment, so that a client that has gone away is noticed.
  if (out.empty()) out = ": keep-alive\n\n";
  return sink.write(out.data(), out.size());
}

// POST /v1/responses: a chat request underneath (responses_request.h), answered as a response
// object or its events (responses_output.h).
void Server::handle_responses(const httplib::Request& req, httplib::Response& res) {
  if (opt_.journal && answer_known_key(req, res)) return;
  ResponsesRequest rr;
  try {
    if (shutting_down_) throw shutting_down_error();
    rr = parse_responses_request(req.body, opt_.model);
  } catch (const ApiError& e) {
    return send_error(req, res, e);
  } catch (const std::exception& e) {
    return send_error(req, res, bad_request(e.what()));
  }
  const ResponseMeta meta = meta_for(rr.api, "resp_");
  if (opt_.journal) return handle_journaled(Endpoint::chat, rr.api, meta, req, res, &rr.settings);
  // Named, not a structured binding: the lambdas below capture them (clang 14 cannot).
  auto started = start_exchange(rr.api, meta, req, res);
  auto ex = std::move(started.first);
  auto release = std::move(started.second);
  if (!ex) return;
  const Tokenizer& tok = *opt_.model.tokenizer;
  auto out = std::make_shared<ResponseBuilder>(meta.id, meta.model, meta.created, std::move(rr.settings),
                                               rr.api.thinking, tok.token_to_id("<think>"), tok.token_to_id("</think>"));
  if (!rr.api.stream) {
    wait_all(*ex, [&](const engine::Event& e, const ChoiceDelta& d) { out->add(e.token, d); });
    release(false);
    const ChoiceBuilder& ch = ex->choices[0];
    if (!ch.error().empty())
      return send_error(req, res, ch.cancelled() && shutting_down_ ? shutting_down_error() : internal_error(ch.error()));
    out->finish(ch.finish_reason(), ch.prompt_tokens(), ch.completion_tokens(), ch.cached_tokens());
    res.set_content(dump_json(out->response()), "application/json");
    ex->done = true;
    return;
  }
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [ex, out](size_t, httplib::DataSink& sink) {
        try {
          return responses_stream_step(*ex, *out, sink);
        } catch (const std::exception& e) {
          ex->stream_errors.push_back(e.what());
          std::string s = out->fail(e.what());
          sink.write(s.data(), s.size());
          sink.done();
          return true;
        }
      },
      [release](bool success) { release(!success); });
}

// As stream_step, for a response's events: response.created first, then what each engine
// event adds, and at the end response.completed / .incomplete (or the error and response.failed).
bool Server::responses_stream_step(Exchange& x, ResponseBuilder& b, httplib::DataSink& sink) {
  if (!x.started[0]) {
    x.started[0] = true;
    const std::string out = b.start();
    return sink.write(out.data(), out.size());
  }
  std::string out;
  for (auto& [c, e] : x.take(std::chrono::milliseconds(500))) {
    if (!x.first_token && e.token >= 0) x.first_token = std::chrono::steady_clock::now();
    auto& ch = x.choices[c];
    ChoiceDelta d = ch.add(e);
    if (ch.finished()) ++x.finished;
    if (!ch.error().empty()) {
      x.stream_errors.push_back(ch.error());
      out += b.fail(ch.error());
      continue;
    }
    out += b.add(e.token, d);
  }
  if (x.finished == x.choices.size()) {
    const ChoiceBuilder& ch = x.choices[0];
    if (ch.error().empty()) out += b.finish(ch.finish_reason(), ch.prompt_tokens(), ch.completion_tokens(), ch.cached_tokens());
    if (!sink.write(out.data(), out.size())) return false;
    sink.done();
    x.done = true;
    return true;
  }
  if (out.empty()) out = ": keep-alive\n\n";
  return sink.write(out.data(), out.size());
}

}  // namespace strata::server
