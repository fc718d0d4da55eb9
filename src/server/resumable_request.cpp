#include "server/resumable_request.h"

#include "server/api_error.h"

namespace strata::server {

namespace {

bool is_last(const engine::Event& e) { return e.finish != FinishReason::none || e.cancelled || !e.error.empty(); }

// The cancelled event's delta followed by what ending it released.
ChoiceDelta merged(ChoiceDelta d, ChoiceDelta end) {
  d.reasoning += end.reasoning;
  d.content += end.content;
  if (d.tool_calls.empty()) d.first_tool_index = end.first_tool_index;
  d.tool_calls.insert(d.tool_calls.end(), end.tool_calls.begin(), end.tool_calls.end());
  d.tool_call_ids.insert(d.tool_call_ids.end(), end.tool_call_ids.begin(), end.tool_call_ids.end());
  d.finish_reason = end.finish_reason;
  return d;
}

}  // namespace

std::pair<int64_t, bool> ResumableRequest::add(size_t choice, const engine::Event& e) {
  std::lock_guard lk(mu);
  events[choice].push_back(e);
  const int64_t index = e.token >= 0 ? tokens[choice]++ : -1;
  bool now_done = false;
  if (is_last(e) && ++finished == events.size()) {
    finished_at = std::chrono::steady_clock::now();
    now_done = true;
  }
  cv.notify_all();
  return {index, now_done};
}

bool ResumableRequest::done() {
  std::lock_guard lk(mu);
  return finished == events.size();
}

bool ResumableRequest::ended_by_cancel() {
  std::lock_guard lk(mu);
  for (const auto& evs : events)
    if (!evs.empty() && evs.back().cancelled) return true;
  return false;
}

std::vector<int64_t> parse_last_event_id(const std::string& header, size_t choices) {
  std::vector<int64_t> out(choices, 0);
  if (header.empty()) return out;
  if (header == "done") return std::vector<int64_t>(choices, kAfterDone);
  if (header == "usage") return std::vector<int64_t>(choices, kAfterUsage);
  size_t at = 0;
  for (size_t c = 0; c < choices; ++c) {
    const size_t dot = header.find('.', at);
    const std::string part = header.substr(at, dot == std::string::npos ? std::string::npos : dot - at);
    if (part.empty() || part.size() > 9 || part.find_first_not_of("0123456789") != std::string::npos ||
        (dot == std::string::npos) != (c + 1 == choices))
      throw bad_request("Last-Event-ID '" + header + "' is not an event id of this stream (" +
                        std::to_string(choices) + " dot-separated counts).");
    out[c] = std::stoll(part);
    at = dot + 1;
  }
  return out;
}

StreamRenderer::StreamRenderer(ResumableRequest& r, const Tokenizer& tok, std::vector<int64_t> skip)
    : r_(r), next_(r.echo.size(), 0), sent_(r.echo.size(), 0), skip_(std::move(skip)), started_(r.echo.size(), false) {
  for (size_t c = 0; c < r.echo.size(); ++c) choices_.emplace_back(tok, r.meta, c, r.echo[c]);
  after_ = skip_.empty() ? 0 : skip_[0] == kAfterDone ? 2 : skip_[0] == kAfterUsage ? 1 : 0;
}

std::string StreamRenderer::id() const {
  std::string s;
  for (size_t c = 0; c < sent_.size(); ++c) s += (c ? "." : "") + std::to_string(std::max(sent_[c], skip_[c]));
  return s;
}

std::string StreamRenderer::step(std::chrono::milliseconds wait) {
  std::vector<std::pair<size_t, engine::Event>> evs;
  {
    std::unique_lock lk(r_.mu);
    auto fresh = [&] {
      for (size_t c = 0; c < next_.size(); ++c)
        if (next_[c] < r_.events[c].size()) return true;
      return false;
    };
    r_.cv.wait_for(lk, wait, fresh);
    for (size_t c = 0; c < next_.size(); ++c)
      for (; next_[c] < r_.events[c].size(); ++next_[c]) evs.emplace_back(c, r_.events[c][next_[c]]);
  }
  std::string out;
  for (auto& [c, e] : evs) {
    auto& ch = choices_[c];
    ChoiceDelta d = ch.add(e);
    if (ch.finished()) ++finished_;
    if (ch.cancelled() && r_.cancelled) d = merged(std::move(d), ch.end_cancelled());
    if (!ch.error().empty()) {
      out += sse_event(ApiError(500, ch.error(), "server_error").to_json());
      continue;
    }
    if (d.empty() && started_[c]) continue;
    const bool first = !started_[c];
    started_[c] = true;
    if (++sent_[c] <= skip_[c]) continue;  // the client has it
    out += "id: " + id() + "\n" + sse_event(chunk_json(r_.meta, c, d, first, r_.include_usage));
  }
  if (finished_ == choices_.size() && !done_) {
    done_ = true;
    if (r_.include_usage && after_ < 1) {
      int64_t prompt = 0, completion = 0, cached = 0;
      for (size_t c = 0; c < choices_.size(); ++c) {
        if (c % r_.n == 0) prompt += choices_[c].prompt_tokens(), cached += choices_[c].cached_tokens();
        completion += choices_[c].completion_tokens();
      }
      out += "id: usage\n" + sse_event(usage_chunk_json(r_.meta, usage_json(prompt, completion, cached)));
    }
    if (after_ < 2) out += "id: done\n" + sse_done();
  }
  return out;
}

ojson render_response(ResumableRequest& r, const Tokenizer& tok) {
  std::vector<std::vector<engine::Event>> events;
  {
    std::unique_lock lk(r.mu);
    r.cv.wait(lk, [&] { return r.finished == r.events.size(); });
    events = r.events;
  }
  int64_t prompt = 0, completion = 0, cached = 0;
  std::vector<ojson> choices;
  for (size_t c = 0; c < events.size(); ++c) {
    ChoiceBuilder ch(tok, r.meta, c, r.echo[c]);
    for (const auto& e : events[c]) ch.add(e);
    if (ch.cancelled() && r.cancelled) ch.end_cancelled();
    if (!ch.error().empty()) throw internal_error(ch.error());
    if (c % r.n == 0) prompt += ch.prompt_tokens(), cached += ch.cached_tokens();
    completion += ch.completion_tokens();
    choices.push_back(ch.choice_json());
  }
  return response_json(r.meta, choices, usage_json(prompt, completion, cached));
}

}  // namespace strata::server
