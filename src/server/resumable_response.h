// A journaled POST /v1/responses rendered from its recorded events (resumable_request.h): the
// response object, and its stream from any event on. The events are numbered by
// sequence_number, which is also each one's SSE id; a client that had events up to N gets the
// ones after it.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

#include "server/openai_response.h"
#include "server/responses_output.h"
#include "server/resumable_request.h"

namespace strata::server {

// Last-Event-ID or starting_after: the sequence number of the last event a client had ("" =
// none, -1). A 400 ApiError naming `what` when it is not a sequence number.
int64_t parse_sequence_number(const std::string& text, const std::string& what);

class ResponseStreamRenderer {
 public:
  // Leaves out the events numbered up to `after`.
  ResponseStreamRenderer(ResumableRequest& r, const Tokenizer& tok, int64_t after);
  // What is new since the last call, waiting up to `wait` for events; the terminal event last.
  std::string step(std::chrono::milliseconds wait);
  bool done() const { return done_; }

 private:
  ResumableRequest& r_;
  ChoiceBuilder choice_;
  ResponseBuilder out_;
  size_t next_ = 0;  // events rendered
  bool started_ = false, done_ = false;
};

// The response object once the request has ended (waits for it): completed, incomplete, or
// cancelled by its client. Throws ApiError when it failed.
ojson render_response_object(ResumableRequest& r, const Tokenizer& tok);

}  // namespace strata::server
