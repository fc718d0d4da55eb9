// GET /requests: the server's running and waiting requests with their token counts, the
// cache bytes each holds and their age — what llama.cpp's /slots shows, for a continuous-
// batching engine. Behind the API key like every route but the web page and health.
#pragma once
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/engine.h"

namespace strata::server {

// {"object": "list", "running": N, "waiting": M, "data": [{"id", "state": "running"|"waiting",
//  "prompt_tokens", "cached_prompt_tokens", "generated_tokens", "max_tokens", "context_tokens",
//  "cache_bytes", "age_seconds", "structured_output"}...]}
nlohmann::ordered_json requests_json(const std::vector<engine::RequestInfo>& requests);

}  // namespace strata::server
