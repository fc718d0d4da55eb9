#include "server/resumable_response.h"

#include "server/api_error.h"
#include "text/tokenizer.h"

namespace strata::server {

namespace {

ResponseBuilder builder(const ResumableRequest& r, const Tokenizer& tok) {
  return ResponseBuilder(r.meta.id, r.meta.model, r.meta.created, r.settings, r.meta.thinking, tok.token_to_id("<think>"),
                         tok.token_to_id("</think>"));
}

// One event into the response; at the choice's end its terminal events. `failed`: what a
// choice that ended in an error (not its client's cancellation) left.
std::string render(ResumableRequest& r, ChoiceBuilder& ch, ResponseBuilder& b, const engine::Event& e,
                   std::string* failed) {
  std::string out = b.add(e.token, ch.add(e));
  if (!ch.finished()) return out;
  if (ch.cancelled() && r.cancelled) {
    out += b.add(-1, ch.end_cancelled());  // what the output parser still held
    return out + b.cancel(ch.prompt_tokens(), ch.completion_tokens(), ch.cached_tokens());
  }
  if (ch.cancelled()) {
    // Cancelled by a shutdown: resumed at the next start, where this stream goes on. The
    // client is told without a numbered event, so that its Last-Event-ID still says where.
    if (failed) *failed = ch.error();
    return out + sse_named_event("error", {{"type", "error"},
                                           {"code", "server_shutting_down"},
                                           {"message", "The server is shutting down; the response goes on after its "
                                                       "restart: send the request again with its Last-Event-ID."},
                                           {"param", nullptr}});
  }
  if (!ch.error().empty()) {
    if (failed) *failed = ch.error();
    return out + b.fail(ch.error());
  }
  return out + b.finish(ch.finish_reason(), ch.prompt_tokens(), ch.completion_tokens(), ch.cached_tokens());
}

}  // namespace

int64_t parse_sequence_number(const std::string& text, const std::string& what) {
  if (text.empty()) return -1;
  if (text.size() > 15 || text.find_first_not_of("0123456789") != std::string::npos)
    throw ApiError(400, what + " '" + text + "' is not a sequence number of this response's stream.",
                   "invalid_request_error", what == "starting_after" ? what : "");
  return std::stoll(text);
}

ResponseStreamRenderer::ResponseStreamRenderer(ResumableRequest& r, const Tokenizer& tok, int64_t after)
    : r_(r), choice_(tok, r.meta, 0), out_(builder(r, tok)) {
  out_.skip_events(after + 1);
}

std::string ResponseStreamRenderer::step(std::chrono::milliseconds wait) {
  std::string out;
  if (!started_) {
    started_ = true;
    out = out_.start();
  }
  std::vector<engine::Event> evs;
  {
    std::unique_lock lk(r_.mu);
    auto& mine = r_.events[0];
    if (out.empty()) r_.cv.wait_for(lk, wait, [&] { return next_ < mine.size(); });
    evs.assign(mine.begin() + ptrdiff_t(next_), mine.end());
    next_ = mine.size();
  }
  for (const engine::Event& e : evs) {
    if (done_) break;
    out += render(r_, choice_, out_, e, nullptr);
    done_ = choice_.finished();
  }
  return out;
}

ojson render_response_object(ResumableRequest& r, const Tokenizer& tok) {
  std::vector<engine::Event> events;
  {
    std::unique_lock lk(r.mu);
    r.cv.wait(lk, [&] { return r.finished == r.events.size(); });
    events = r.events[0];
  }
  ChoiceBuilder ch(tok, r.meta, 0);
  ResponseBuilder b = builder(r, tok);
  b.skip_events(INT64_MAX);  // only the object is wanted
  std::string failed;
  for (const engine::Event& e : events) render(r, ch, b, e, &failed);
  if (!failed.empty()) throw internal_error(failed);
  return b.response();
}

}  // namespace strata::server
