#include "server/requests_endpoint.h"

namespace strata::server {

nlohmann::ordered_json requests_json(const std::vector<engine::RequestInfo>& requests) {
  nlohmann::ordered_json data = nlohmann::ordered_json::array();
  int64_t running = 0;
  for (const auto& r : requests) {
    running += r.running;
    data.push_back({{"id", r.id},
                    {"state", r.running ? "running" : "waiting"},
                    {"prompt_tokens", r.prompt_tokens},
                    {"cached_prompt_tokens", r.cached_prompt_tokens},
                    {"generated_tokens", r.generated_tokens},
                    {"max_tokens", r.max_tokens},
                    {"context_tokens", r.context_tokens},
                    {"cache_bytes", r.cache_bytes},
                    {"age_seconds", r.age_seconds},
                    {"structured_output", r.structured}});
  }
  return {{"object", "list"},
          {"running", running},
          {"waiting", int64_t(requests.size()) - running},
          {"data", std::move(data)}};
}

}  // namespace strata::server
