#include "server/openai_response.h"

#include <cmath>
#include <random>
#include <utility>

#include "core/error.h"
#include "text/tokenizer.h"

namespace strata::server {
namespace {

// JSON has no -inf; OpenAI reports impossible tokens as -9999.0.
double finite_logprob(float lp) { return std::isfinite(lp) ? double(lp) : -9999.0; }

ojson bytes_json(const std::string& s) {
  ojson b = ojson::array();
  for (unsigned char c : s) b.push_back(int(c));
  return b;
}

}  // namespace

std::string new_id(const char* prefix) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::string id = prefix;
  for (int i = 0; i < 24; ++i) id += kChars[rng() % (sizeof(kChars) - 1)];
  return id;
}

// "call_" + 24 alphanumerics derived from the response id, the choice and the call's index:
// unique as the response id is, and the same whenever the answer is rendered again (a stream
// resumed after a restart of strata serve --journal).
std::string ChoiceBuilder::tool_call_id(size_t call) const {
  static const char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a over the three, then splitmix64 per character
  for (unsigned char c : meta_.id + "/" + std::to_string(index_) + "/" + std::to_string(call)) h = (h ^ c) * 0x100000001b3ull;
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) {
    uint64_t z = (h += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    id += kChars[(z ^ (z >> 31)) % (sizeof(kChars) - 1)];
  }
  return id;
}

ChoiceBuilder::ChoiceBuilder(const Tokenizer& tok, const ResponseMeta& meta, size_t index, std::string echo)
    : tok_(tok), meta_(meta), index_(index), content_(echo), echo_(std::move(echo)) {
  if (meta_.endpoint == Endpoint::chat) {
    if (!meta_.chat_format) throw Error("a chat response needs the model's chat format");
    parser_ = meta_.chat_format->parser(meta_.thinking);
    logprobs_ = ojson::array();
  } else {
    logprobs_ = {{"tokens", ojson::array()},
                 {"token_logprobs", ojson::array()},
                 {"top_logprobs", ojson::array()},
                 {"text_offset", ojson::array()}};
  }
}
ChoiceBuilder::ChoiceBuilder(ChoiceBuilder&&) noexcept = default;
ChoiceBuilder::~ChoiceBuilder() = default;

void ChoiceBuilder::take(std::vector<StreamEvent>&& evs, ChoiceDelta& d) {
  for (auto& e : evs) {
    switch (e.kind) {
      case StreamEvent::Kind::kReasoning: d.reasoning += e.text; break;
      case StreamEvent::Kind::kContent: d.content += e.text; break;
      case StreamEvent::Kind::kToolCall:
        if (d.tool_calls.empty()) d.first_tool_index = tool_calls_.size();
        d.tool_calls.push_back(e.tool_call);
        d.tool_call_ids.push_back(tool_call_id(tool_calls_.size()));
        tool_calls_.push_back(e.tool_call);
        tool_call_ids_.push_back(d.tool_call_ids.back());
        break;
    }
  }
}

void ChoiceBuilder::parse(std::string_view text, ChoiceDelta& d, bool at_end) {
  if (!parser_) {
    d.content += text;
    return;
  }
  if (raw_) {
    d.content += text;
    return;
  }
  try {
    take(parser_->feed(text), d);
    // The end token, a stop string or max_tokens ended the turn.
    if (at_end) take(parser_->finish(), d);
  } catch (const Error&) {
    // Output the format's parser rejects (a random or truncated completion): what follows is
    // passed through as content rather than failing the request.
    if (!at_end) d.content += text;
    raw_ = true;
  }
}

ojson ChoiceBuilder::logprob_entries(const engine::Event& ev, size_t text_offset) {
  const SampledLogprobs& lp = *ev.logprobs;
  const std::string tok_text = tok_.token_bytes(ev.token);
  if (meta_.endpoint == Endpoint::chat) {
    ojson top = ojson::array();
    for (const auto& t : lp.top) {
      std::string s = tok_.token_bytes(t.token);
      top.push_back({{"token", s}, {"logprob", finite_logprob(t.logprob)}, {"bytes", bytes_json(s)}});
    }
    ojson entry = {{"token", tok_text},
                   {"logprob", finite_logprob(lp.logprob)},
                   {"bytes", bytes_json(tok_text)},
                   {"top_logprobs", top}};
    logprobs_.push_back(entry);
    return {{"content", ojson::array({entry})}};
  }
  // keys may hold a partial UTF-8 character; dump_json() replaces it when the body is written
  ojson top_plain = ojson::object();
  for (const auto& t : lp.top) top_plain[tok_.token_bytes(t.token)] = finite_logprob(t.logprob);
  logprobs_["tokens"].push_back(tok_text);
  logprobs_["token_logprobs"].push_back(finite_logprob(lp.logprob));
  logprobs_["top_logprobs"].push_back(top_plain);
  logprobs_["text_offset"].push_back(text_offset);
  return {{"tokens", {tok_text}},
          {"token_logprobs", {finite_logprob(lp.logprob)}},
          {"top_logprobs", {top_plain}},
          {"text_offset", {text_offset}}};
}

ChoiceDelta ChoiceBuilder::add(const engine::Event& ev) {
  ChoiceDelta d;
  if (finished_) return d;
  if (ev.token >= 0) {
    last_token_ = ev.token;
    ++completion_tokens_;
    if (ev.logprobs && meta_.top_logprobs >= 0) d.logprobs = logprob_entries(ev, content_.size());
  }
  const bool last = ev.finish != FinishReason::none || ev.cancelled || !ev.error.empty() ||
                    ev.kind == engine::EventKind::finished;
  const bool clean_end = last && !ev.cancelled && ev.error.empty() && ev.finish != FinishReason::none;
  parse(ev.text, d, clean_end);
  reasoning_ += d.reasoning;
  content_ += d.content;
  if (!echo_.empty()) d.content.insert(0, std::exchange(echo_, {}));  // already in content_
  if (last) {
    finished_ = true;
    cancelled_ = ev.cancelled;
    error_ = ev.error;
    if (ev.cancelled && error_.empty()) error_ = "the request was cancelled";
    prompt_tokens_ = ev.prompt_tokens;
    cached_tokens_ = ev.cached_prompt_tokens;
    if (ev.generated_tokens > 0) completion_tokens_ = ev.generated_tokens;
    if (clean_end) {
      finish_reason_ = !tool_calls_.empty() ? "tool_calls" : finish_reason_name(ev.finish);
      d.finish_reason = finish_reason_;
    }
  }
  return d;
}

ChoiceDelta ChoiceBuilder::end_cancelled() {
  ChoiceDelta d;
  error_.clear();
  if (parser_ && !raw_) parse({}, d, /*at_end=*/true);
  reasoning_ += d.reasoning;
  content_ += d.content;
  finish_reason_ = d.finish_reason = "cancelled";
  return d;
}

ojson ChoiceBuilder::choice_json() const {
  ojson lp = meta_.top_logprobs >= 0 ? (meta_.endpoint == Endpoint::chat ? ojson{{"content", logprobs_}} : logprobs_)
                                     : ojson(nullptr);
  ojson fr = finish_reason_ ? ojson(finish_reason_) : ojson(nullptr);
  if (meta_.endpoint == Endpoint::completions)
    return {{"index", index_}, {"text", content_}, {"logprobs", lp}, {"finish_reason", fr}};
  ojson msg = {{"role", "assistant"}, {"content", content_}};
  // With thinking asked for, reasoning_content is always there; a model may also reason unasked.
  if (meta_.thinking || !reasoning_.empty()) msg["reasoning_content"] = reasoning_;
  if (!tool_calls_.empty()) {
    ojson calls = ojson::array();
    for (size_t i = 0; i < tool_calls_.size(); ++i)
      calls.push_back({{"id", tool_call_ids_[i]},
                       {"type", "function"},
                       {"function", {{"name", tool_calls_[i].name}, {"arguments", tool_calls_[i].arguments}}}});
    msg["tool_calls"] = calls;
  }
  return {{"index", index_}, {"message", msg}, {"logprobs", lp}, {"finish_reason", fr}};
}

ojson usage_json(int64_t prompt_tokens, int64_t completion_tokens, int64_t cached_tokens) {
  return {{"prompt_tokens", prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"total_tokens", prompt_tokens + completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", cached_tokens}}}};
}

ojson chunk_json(const ResponseMeta& meta, size_t index, const ChoiceDelta& d, bool first, bool include_usage) {
  ojson fr = d.finish_reason ? ojson(d.finish_reason) : ojson(nullptr);
  ojson choice;
  if (meta.endpoint == Endpoint::chat) {
    ojson delta = ojson::object();
    if (first) delta["role"] = "assistant";
    if (!d.reasoning.empty()) delta["reasoning_content"] = d.reasoning;
    if (!d.content.empty() || first) delta["content"] = d.content;
    if (!d.tool_calls.empty()) {
      ojson calls = ojson::array();
      for (size_t i = 0; i < d.tool_calls.size(); ++i)
        calls.push_back({{"index", d.first_tool_index + i},
                         {"id", d.tool_call_ids[i]},
                         {"type", "function"},
                         {"function", {{"name", d.tool_calls[i].name}, {"arguments", d.tool_calls[i].arguments}}}});
      delta["tool_calls"] = calls;
    }
    choice = {{"index", index}, {"delta", delta}, {"logprobs", d.logprobs}, {"finish_reason", fr}};
  } else {
    choice = {{"index", index}, {"text", d.content}, {"logprobs", d.logprobs}, {"finish_reason", fr}};
  }
  ojson j = {{"id", meta.id},
             {"object", meta.endpoint == Endpoint::chat ? "chat.completion.chunk" : "text_completion"},
             {"created", meta.created},
             {"model", meta.model},
             {"choices", ojson::array({choice})}};
  if (include_usage) j["usage"] = nullptr;
  return j;
}

ojson usage_chunk_json(const ResponseMeta& meta, const ojson& usage) {
  return {{"id", meta.id},
          {"object", meta.endpoint == Endpoint::chat ? "chat.completion.chunk" : "text_completion"},
          {"created", meta.created},
          {"model", meta.model},
          {"choices", ojson::array()},
          {"usage", usage}};
}

ojson response_json(const ResponseMeta& meta, const std::vector<ojson>& choices, const ojson& usage) {
  return {{"id", meta.id},
          {"object", meta.endpoint == Endpoint::chat ? "chat.completion" : "text_completion"},
          {"created", meta.created},
          {"model", meta.model},
          {"choices", choices},
          {"usage", usage}};
}

std::string dump_json(const ojson& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

std::string sse_event(const ojson& j) { return "data: " + dump_json(j) + "\n\n"; }
std::string sse_done() { return "data: [DONE]\n\n"; }

}  // namespace strata::server
