// strata serve --journal: completions and responses journaled before they reach the engine,
// answered from their recorded events (resumable_request.h, resumable_response.h), found again
// by Idempotency-Key or response id, and at start-up resubmitted from the journal, or,
// cancelled by their clients, rebuilt from it.
#include <httplib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "core/error.h"
#include "engine/request_snapshot.h"
#include "server/api_error.h"
#include "server/journal.h"
#include "server/responses_request.h"
#include "server/resumable_request.h"
#include "server/resumable_response.h"
#include "server/server.h"
#include "text/tokenizer.h"

namespace strata::server {
namespace {

ApiError needs_journal(const std::string& what) {
  return ApiError(404, "Requests are kept for " + what + " only with --journal.", "invalid_request_error", "", "not_found");
}

ApiError unknown_request(const std::string& id) {
  return ApiError(404, "No request " + id + ": unknown, or finished longer ago than the journal keeps it.",
                  "invalid_request_error", "", "not_found");
}

// Why a request's Idempotency-Key cannot answer this POST: sent to another endpoint (the same
// body can be valid at two; its answer has the first one's shape), or with another body.
std::optional<ApiError> key_conflict(const ResumableRequest& rr, const httplib::Request& req) {
  const std::string& key = rr.idempotency_key;
  const char* first_path = rr.responses                             ? "/v1/responses"
                           : rr.meta.id.rfind("chatcmpl-", 0) == 0 ? "/v1/chat/completions"
                                                                   : "/v1/completions";
  if (req.path != first_path)
    return ApiError(409, "Idempotency-Key " + key + " belongs to request " + rr.meta.id + " of " + first_path + ".",
                    "invalid_request_error", "", "idempotency_key_reused");
  if (rr.body != req.body)
    return ApiError(409, "Idempotency-Key " + key + " belongs to request " + rr.meta.id + ", whose body was different.",
                    "invalid_request_error", "", "idempotency_key_reused");
  return std::nullopt;
}

}  // namespace

std::shared_ptr<ResumableRequest> Server::track(const ApiRequest& r, const ResponseMeta& meta, const std::string& body,
                                                const std::string& key, const nlohmann::ordered_json* settings,
                                                std::shared_ptr<ResumableRequest>* existing) {
  auto rr = std::make_shared<ResumableRequest>();
  rr->body = body;
  rr->responses = settings != nullptr;
  if (settings) rr->settings = *settings;
  rr->idempotency_key = key;
  rr->meta = meta;
  rr->n = size_t(r.n);
  rr->stream = r.stream;
  rr->include_usage = r.include_usage;
  for (size_t c = 0; c < r.choices(); ++c) rr->echo.push_back(r.echo ? r.prompt_texts[r.prompt_of(c)] : std::string());
  rr->events.resize(r.choices());
  rr->tokens.assign(r.choices(), 0);
  return resumable_.add(rr, opt_.journal->options().retain, existing) ? rr : nullptr;
}

std::vector<int64_t> Server::events_had(const ResumableRequest& rr, const std::string& last_event_id) {
  if (rr.responses) return {parse_sequence_number(last_event_id, "Last-Event-ID") + 1};
  return parse_last_event_id(last_event_id, rr.echo.size());
}

bool Server::answer_known_key(const httplib::Request& req, httplib::Response& res) {
  const std::string key = req.get_header_value("Idempotency-Key");
  if (key.empty()) return false;
  std::shared_ptr<ResumableRequest> rr = resumable_.by_key(key);
  const std::string last_event = req.get_header_value("Last-Event-ID");
  if (!rr && !last_event.empty()) {
    // Its client had events of a stream this server no longer knows (retention over, or a
    // journal that lost it): starting it again would send those events twice.
    send_error(req, res, ApiError(404, "Idempotency-Key " + key + " names no request: finished longer ago than the journal "
                                           "keeps it, or lost from it. Its stream cannot go on from Last-Event-ID " +
                                           last_event + "; send it without Last-Event-ID to start it again.",
                                  "invalid_request_error", "", "not_found"));
    return true;
  }
  if (!rr) return false;
  name_trace(req, rr->meta.id);
  if (const auto conflict = key_conflict(*rr, req)) {
    send_error(req, res, *conflict);
    return true;
  }
  std::vector<int64_t> skip;
  try {
    skip = events_had(*rr, last_event);
  } catch (const ApiError& e) {
    send_error(req, res, e);
    return true;
  }
  serve_resumable(rr, rr->stream, std::move(skip), req, res);
  return true;
}

void Server::answer_by_id(const httplib::Request& req, httplib::Response& res) {
  if (!opt_.journal) return send_error(req, res, needs_journal("retrieval"));
  std::shared_ptr<ResumableRequest> rr = resumable_.by_id(req.matches[1]);
  if (!rr) return send_error(req, res, unknown_request(req.matches[1]));
  std::vector<int64_t> skip;
  try {
    skip = events_had(*rr, req.get_header_value("Last-Event-ID"));
  } catch (const ApiError& e) {
    return send_error(req, res, e);
  }
  name_trace(req, rr->meta.id);
  serve_resumable(rr, req.matches[2].length() > 0, std::move(skip), req, res);
}

void Server::cancel_by_id(const httplib::Request& req, httplib::Response& res) {
  if (!opt_.journal) return send_error(req, res, needs_journal("cancellation"));
  std::shared_ptr<ResumableRequest> rr = resumable_.by_id(req.matches[1]);
  if (!rr) return send_error(req, res, unknown_request(req.matches[1]));
  name_trace(req, rr->meta.id);
  if (!cancel_and_wait(*rr, req, res)) return;
  res.set_content(dump_json({{"id", rr->meta.id}, {"object", "request"},
                             {"status", rr->ended_by_cancel() ? "cancelled" : "finished"}}),
                  "application/json");
}

bool Server::cancel_and_wait(ResumableRequest& rr, const httplib::Request& req, httplib::Response& res) {
  std::vector<uint64_t> ids;
  {
    std::lock_guard lk(rr.mu);
    if (rr.finished < rr.events.size()) {
      rr.cancelled = true;  // choices submitted from now on are cancelled by submit_resumable
      ids = rr.engine_ids;
    }
  }
  for (uint64_t id : ids) backend_.cancel(id);  // finished ids are ignored by the engine
  // Its caller's answer says how it ended: cancelled, or finished before the cancellation
  // reached it.
  {
    std::unique_lock lk(rr.mu);
    if (!rr.cv.wait_for(lk, std::chrono::seconds(30), [&] { return rr.finished == rr.events.size(); })) {
      lk.unlock();
      send_error(req, res, internal_error("the request did not end within 30 s of its cancellation"));
      return false;
    }
  }
  return true;
}

void Server::submit_resumable(const std::shared_ptr<ResumableRequest>& rr, std::vector<engine::Request> reqs,
                              const std::vector<int64_t>& skip,
                              std::vector<std::optional<engine::RequestSnapshot>> snapshots) {
  std::vector<uint64_t> ids;
  try {
    for (size_t c = 0; c < reqs.size(); ++c) {
      Journal* j = opt_.journal;
      const int64_t sk = skip[c];
      // The callback holds the request: it lives as long as its engine requests.
      auto on_event = [this, rr, c, j, sk](const engine::Event& e) {
        const auto [index, done] = rr->add(c, e);
        if (index >= sk) j->append(rr->journal_seq, c, e.token);
        // Cancelled by a shutdown: left unfinished in the journal, to be resumed at the next
        // start. Cancelled by its client: ended as such, never resumed.
        if (done && (rr->cancelled || !(e.cancelled && shutting_down_)))
          j->end(rr->journal_seq, rr->cancelled && rr->ended_by_cancel());
      };
      if (c < snapshots.size() && snapshots[c]) {
        // the journaled tokens' events (all but replay's closing one), then the snapshot's
        // request, which goes on from the state they left
        std::vector<engine::Event> before = backend_.replay(std::move(reqs[c]));
        const bool ended = !before.back().cancelled;  // the tokens end it: nothing to continue
        if (!ended) before.pop_back();
        for (const engine::Event& e : before) on_event(e);
        ids.push_back(ended ? 0  // no request
                            : backend_.import_snapshot(std::move(*snapshots[c]), snapshot_file(rr->journal_seq, c),
                                                       std::move(on_event)));
      } else {
        ids.push_back(backend_.submit(std::move(reqs[c]), std::move(on_event)));
      }
      bool cancelled;
      {
        std::lock_guard lk(rr->mu);
        rr->engine_ids.push_back(ids.back());
        cancelled = rr->cancelled;
      }
      if (cancelled) backend_.cancel(ids.back());
    }
  } catch (...) {
    for (uint64_t id : ids) backend_.cancel(id);
    opt_.journal->end(rr->journal_seq);
    resumable_.remove(*rr);
    throw;
  }
}

void Server::handle_journaled(Endpoint ep, const ApiRequest& r, const ResponseMeta& meta, const httplib::Request& req,
                              httplib::Response& res, const nlohmann::ordered_json* settings) {
  name_trace(req, meta.id);
  // What a restart needs to resume it and render the same answer: the body (the response's
  // options), the response's id and time, and each choice's engine request (seed included).
  nlohmann::json jm = {{"endpoint", settings ? "responses" : ep == Endpoint::chat ? "chat" : "completions"},
                       {"body", req.body},
                       {"created", meta.created},
                       {"choices", nlohmann::json::array()}};
  std::vector<engine::Request> reqs;
  for (size_t c = 0; c < r.choices(); ++c) {
    engine::Request er;
    er.prompt = r.prompts[r.prompt_of(c)];
    er.sampling = r.sampling_for(c);
    nlohmann::json sj;
    to_json(sj, er.sampling);
    jm["choices"].push_back({{"prompt", er.prompt}, {"sampling", std::move(sj)}});
    reqs.push_back(std::move(er));
  }
  const std::string key = req.get_header_value("Idempotency-Key");
  if (!key.empty()) jm["idempotency_key"] = key;
  std::shared_ptr<ResumableRequest> existing;
  auto rr = track(r, meta, req.body, key, settings, &existing);
  if (!rr) {  // the same key came in meanwhile
    if (const auto conflict = key_conflict(*existing, req)) return send_error(req, res, *conflict);
    return serve_resumable(existing, existing->stream, events_had(*existing, ""), req, res);
  }
  try {
    rr->journal_seq = opt_.journal->begin(meta.id, jm, r.choices());
  } catch (const std::exception& e) {
    resumable_.remove(*rr);
    return send_error(req, res, internal_error(std::string("the request could not be journaled: ") + e.what()));
  }
  try {
    submit_resumable(rr, std::move(reqs), std::vector<int64_t>(r.choices(), 0));
  } catch (const engine::QueueFull&) {
    res.set_header("Retry-After", std::to_string(retry_after_.seconds()));
    return send_error(req, res, queue_full());
  } catch (const std::exception& e) {
    return send_error(req, res, shutting_down_ ? shutting_down_error() : bad_request(e.what()));
  }
  serve_resumable(rr, r.stream, events_had(*rr, ""), req, res);
}

// The answer rendered from the request's events: the whole body once finished, or its stream
// from where the client stopped. The client going away cancels nothing: it may come back.
void Server::serve_resumable(const std::shared_ptr<ResumableRequest>& rr, bool stream, std::vector<int64_t> skip,
                             const httplib::Request& req, httplib::Response& res) {
  const Tokenizer& tok = *opt_.model.tokenizer;
  name_trace(req, rr->meta.id, rr);
  if (!stream) {
    ++active_;
    try {
      res.set_content(dump_json(rr->responses ? render_response_object(*rr, tok) : render_response(*rr, tok)),
                      "application/json");
    } catch (const ApiError& e) {
      send_error(req, res, e);
    }
    --active_;
    return;
  }
  if (rr->responses) return serve_stream(rr, std::make_shared<ResponseStreamRenderer>(*rr, tok, skip.at(0) - 1), res);
  serve_stream(rr, std::make_shared<StreamRenderer>(*rr, tok, std::move(skip)), res);
}

template <class Renderer>
void Server::serve_stream(const std::shared_ptr<ResumableRequest>& rr, std::shared_ptr<Renderer> renderer,
                          httplib::Response& res) {
  ++active_;
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [rr, renderer](size_t, httplib::DataSink& sink) {
        std::string out = renderer->step(std::chrono::milliseconds(500));
        if (out.empty() && !renderer->done()) out = ": keep-alive\n\n";  // notices a client that has gone away
        if (!out.empty() && !sink.write(out.data(), out.size())) return false;
        if (renderer->done()) sink.done();
        return true;
      },
      [this](bool) { --active_; });
}

std::string Server::snapshot_file(uint64_t seq, size_t c) const {
  const auto dir = std::filesystem::path(opt_.journal->path()).parent_path() / "snapshots";
  return (dir / (std::to_string(seq) + "-" + std::to_string(c) + ".snapshot")).string();
}

std::string Server::shutdown_snapshot_path(uint64_t engine_id) {
  if (!opt_.journal) return "";
  size_t c = 0;
  const auto rr = resumable_.by_engine_id(engine_id, &c);
  if (!rr || rr->cancelled) return "";
  const std::string f = snapshot_file(rr->journal_seq, c);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(f).parent_path(), ec);
  return ec ? "" : f;
}

namespace {

// A shutdown's snapshot continues a choice only when it holds exactly the prompt and the
// journaled tokens (a snapshot left by an older run, or torn, is not used). Read once: it is
// what the choice is imported from.
std::optional<engine::RequestSnapshot> usable_snapshot(const std::string& path, const std::vector<int32_t>& prompt,
                                                       const std::vector<int32_t>& toks) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  try {
    engine::RequestSnapshot snap = engine::read_snapshot(path);
    if (snap.tokens.size() == prompt.size() + toks.size() &&
        std::equal(prompt.begin(), prompt.end(), snap.tokens.begin()) &&
        std::equal(toks.begin(), toks.end(), snap.tokens.begin() + std::ptrdiff_t(prompt.size())))
      return snap;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata serve: journal: snapshot %s is not used: %s\n", path.c_str(), e.what());
  }
  return std::nullopt;
}

}  // namespace

size_t Server::resume_journal() {
  if (!opt_.journal) return 0;
  size_t resumed = 0;
  for (const JournalEntry& e : opt_.journal->recovery().entries) {
    try {
      const nlohmann::json& m = e.meta;
      const std::string endpoint = m.at("endpoint").get<std::string>();
      const std::string body = m.at("body").get<std::string>();
      const std::string key = m.value("idempotency_key", std::string());
      ApiRequest r;
      std::optional<nlohmann::ordered_json> settings;
      if (endpoint == "responses") {
        ResponsesRequest pr = parse_responses_request(body, opt_.model);
        r = std::move(pr.api);
        settings = std::move(pr.settings);
      } else {
        r = endpoint == "chat" ? parse_chat_request(body, opt_.model) : parse_completion_request(body, opt_.model);
      }
      const nlohmann::ordered_json* s = settings ? &*settings : nullptr;
      ResponseMeta meta = meta_for(r, "");
      meta.id = e.key;
      meta.created = m.at("created").get<int64_t>();
      const auto& choices = m.at("choices");
      if (choices.size() != r.choices() || e.tokens.size() != r.choices())
        throw Error("its choices do not match its body");
      std::vector<engine::Request> reqs;
      for (size_t c = 0; c < r.choices(); ++c) {
        engine::Request er;
        er.prompt = choices[c].at("prompt").get<std::vector<int32_t>>();
        from_json(choices[c].at("sampling"), er.sampling);
        reqs.push_back(std::move(er));
      }
      if (e.cancelled) {
        restore_cancelled(e, r, meta, body, key, s, std::move(reqs));
        continue;
      }
      std::vector<int64_t> skip;
      std::vector<std::optional<engine::RequestSnapshot>> snapshots(r.choices());
      for (size_t c = 0; c < r.choices(); ++c) {
        engine::Request& er = reqs[c];
        const auto& toks = e.tokens[c];
        skip.push_back(int64_t(toks.size()));
        if (er.sampling.logprobs) continue;  // not journaled: computed again from the prompt
        snapshots[c] = usable_snapshot(snapshot_file(e.seq, c), er.prompt, toks);
        if (snapshots[c]) {
          er.accepted.assign(toks.begin(), toks.end());  // replayed, not computed
          continue;
        }
        // The last journaled token is computed again: with it the request may have ended (its
        // end record is written after it).
        if (!toks.empty()) {
          er.accepted.assign(toks.begin(), toks.end() - 1);
          er.report_accepted = true;
        }
      }
      auto rr = track(r, meta, body, key, s);
      if (!rr) throw Error("its Idempotency-Key is another request's");
      rr->journal_seq = e.seq;
      const auto from_snapshots = std::count_if(snapshots.begin(), snapshots.end(), [](const auto& s) { return s.has_value(); });
      submit_resumable(rr, std::move(reqs), skip, std::move(snapshots));
      from_snapshots_ += size_t(from_snapshots);
      ++resumed;
    } catch (const std::exception& ex) {
      std::fprintf(stderr, "strata serve: journal: request %s is not %s: %s\n", e.key.c_str(),
                   e.cancelled ? "restored" : "resumed", ex.what());
      opt_.journal->end(e.seq);
    }
  }
  // Read by now (usable_snapshot reads a file whole); a later shutdown writes its own.
  std::error_code ec;
  std::filesystem::remove_all(std::filesystem::path(opt_.journal->path()).parent_path() / "snapshots", ec);
  return resumed;
}

// A request its client cancelled is not computed again: its choices' events are rebuilt from
// the journaled tokens (Backend::replay), so that it answers by id and Idempotency-Key as it
// did before the restart. Logprobs, not journaled, are missing from that answer.
void Server::restore_cancelled(const JournalEntry& e, const ApiRequest& r, const ResponseMeta& meta,
                               const std::string& body, const std::string& key, const nlohmann::ordered_json* settings,
                               std::vector<engine::Request> reqs) {
  std::vector<std::vector<engine::Event>> events;
  for (size_t c = 0; c < reqs.size(); ++c) {
    reqs[c].accepted.assign(e.tokens[c].begin(), e.tokens[c].end());
    events.push_back(backend_.replay(std::move(reqs[c])));
  }
  auto rr = track(r, meta, body, key, settings);
  if (!rr) throw Error("its Idempotency-Key is another request's");
  rr->journal_seq = e.seq;
  rr->cancelled = true;
  for (size_t c = 0; c < events.size(); ++c)
    for (const engine::Event& ev : events[c]) rr->add(c, ev);
}

}  // namespace strata::server
