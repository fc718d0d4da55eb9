#include "cli/single_request.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>

#include "core/error.h"

namespace strata::cli {

SingleRequestResult run_single_request(engine::Engine& eng, engine::Request r,
                                       const std::function<bool(const engine::Event&)>& on_event) {
  using clock = std::chrono::steady_clock;
  struct Queue {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<engine::Event> events;
  };
  auto q = std::make_shared<Queue>();
  const auto t0 = clock::now();
  const uint64_t id = eng.submit(std::move(r), [q](const engine::Event& e) {
    std::lock_guard lk(q->mu);
    q->events.push_back(e);
    q->cv.notify_all();
  });
  SingleRequestResult out;
  clock::time_point first{}, last{};
  bool cancel_sent = false;
  while (true) {
    engine::Event e;
    {
      std::unique_lock lk(q->mu);
      q->cv.wait(lk, [&] { return !q->events.empty(); });
      e = std::move(q->events.front());
      q->events.pop_front();
    }
    if (e.kind == engine::EventKind::token) {
      const auto now = clock::now();
      if (out.tokens.empty()) first = now;
      last = now;
      out.tokens.push_back(e.token);
    }
    if (!cancel_sent && !on_event(e)) {
      eng.cancel(id);
      cancel_sent = true;
    }
    if (e.finish != FinishReason::none || e.kind == engine::EventKind::finished) {
      out.finish = e.finish;
      out.cancelled = e.cancelled;
      out.error = e.error;
      out.prompt_tokens = e.prompt_tokens;
      out.cached_prompt_tokens = e.cached_prompt_tokens;
      out.spec.rounds = e.spec_rounds;
      out.spec.drafted = e.spec_drafted;
      out.spec.accepted = e.spec_accepted;
      out.spec.emitted = e.spec_rounds + e.spec_accepted;  // a round emits its accepted drafts + one
      break;
    }
  }
  if (!out.tokens.empty()) {
    out.ttft_seconds = std::chrono::duration<double>(first - t0).count();
    out.decode_seconds = std::chrono::duration<double>(last - first).count();
  }
  return out;
}

}  // namespace strata::cli
