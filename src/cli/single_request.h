// One request through the serving engine, waited for on the calling thread: `strata generate`
// and `strata chat` run the very code path the server runs (one decode loop), so their tokens
// equal the server's bit for bit.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/speculative.h"

namespace strata::cli {

struct SingleRequestResult {
  std::vector<int32_t> tokens;  // generated ids
  FinishReason finish = FinishReason::none;
  bool cancelled = false;
  std::string error;
  int64_t prompt_tokens = 0, cached_prompt_tokens = 0;
  double ttft_seconds = 0, decode_seconds = 0;  // submit → first token; first token → last
  SpeculativeStats spec;                         // this request's verification rounds
};

// Submits r and delivers its events to on_event on the calling thread, in order; on_event
// returning false cancels the request. Throws strata::Error for a request the engine refuses.
SingleRequestResult run_single_request(engine::Engine& eng, engine::Request r,
                                       const std::function<bool(const engine::Event&)>& on_event);

}  // namespace strata::cli
