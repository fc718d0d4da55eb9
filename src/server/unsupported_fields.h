// Request fields strata does not act on are answered with a 400 that names them, never
// ignored: a client asking for a suffix or best_of gets told, instead of a plausible-looking
// answer that silently lacks what it asked for. (response_format is response_format.h's.)
//
// Accepted without effect (they change nothing about the output): user, metadata, store,
// service_tier, prompt_cache_key, safety_identifier, parallel_tool_calls: true,
// modalities ["text"], echo: false, suffix "" and
// best_of equal to n.
#pragma once
#include <nlohmann/json.hpp>

#include "server/openai_request.h"

namespace strata::server {

// Throws ApiError (400, param = the field, code unsupported_parameter / unsupported_value) for
// the first field of `body` that asks for something strata does not do, and for a wrongly
// typed one. `n` is the request's number of choices per prompt (best_of is checked against it).
void check_unsupported_fields(const nlohmann::ordered_json& body, Endpoint ep, int n);

}  // namespace strata::server
