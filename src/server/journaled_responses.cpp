// strata serve --journal: a response found again by its id, as OpenAI's Responses API finds a
// stored one: GET /v1/responses/{id} (the response object once it has ended, or with
// ?stream=true its events, after ?starting_after=N when given) and POST
// /v1/responses/{id}/cancel.
#include <httplib.h>

#include "server/api_error.h"
#include "server/journal.h"
#include "server/resumable_request.h"
#include "server/resumable_response.h"
#include "server/server.h"
#include "text/tokenizer.h"

namespace strata::server {
namespace {

ApiError needs_journal() {
  return ApiError(404, "Responses are kept for retrieval and cancellation only with --journal.", "invalid_request_error",
                  "", "not_found");
}

ApiError unknown_response(const std::string& id) {
  return ApiError(404, "No response " + id + ": unknown, or finished longer ago than the journal keeps it.",
                  "invalid_request_error", "", "not_found");
}

}  // namespace

void Server::retrieve_response(const httplib::Request& req, httplib::Response& res) {
  if (!opt_.journal) return send_error(req, res, needs_journal());
  std::shared_ptr<ResumableRequest> rr = resumable_.by_id(req.matches[1]);
  if (!rr || !rr->responses) return send_error(req, res, unknown_response(req.matches[1]));
  name_trace(req, rr->meta.id);
  const std::string stream = req.get_param_value("stream");
  if (!stream.empty() && stream != "true" && stream != "false")
    return send_error(req, res, ApiError(400, "stream must be true or false.", "invalid_request_error", "stream"));
  const bool streaming = stream == "true";
  std::string after = req.get_param_value("starting_after");
  if (!after.empty() && !streaming)
    return send_error(req, res, ApiError(400, "starting_after is for a stream: add stream=true.",
                                         "invalid_request_error", "starting_after"));
  // An EventSource reconnecting sends the id of the last event it had instead.
  if (after.empty()) after = req.get_header_value("Last-Event-ID");
  int64_t had = 0;
  try {
    had = parse_sequence_number(after, req.has_param("starting_after") ? "starting_after" : "Last-Event-ID") + 1;
  } catch (const ApiError& e) {
    return send_error(req, res, e);
  }
  serve_resumable(rr, streaming, {had}, req, res);
}

// Cancelled like DELETE /v1/requests/{id}; the answer is the response object once it has
// ended: status cancelled, or how it ended when it finished before the cancellation reached it.
void Server::cancel_response(const httplib::Request& req, httplib::Response& res) {
  if (!opt_.journal) return send_error(req, res, needs_journal());
  std::shared_ptr<ResumableRequest> rr = resumable_.by_id(req.matches[1]);
  if (!rr || !rr->responses) return send_error(req, res, unknown_response(req.matches[1]));
  name_trace(req, rr->meta.id);
  if (!cancel_and_wait(*rr, req, res)) return;
  serve_resumable(rr, false, {0}, req, res);
}

}  // namespace strata::server
