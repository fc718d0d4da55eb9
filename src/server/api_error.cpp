#include "server/api_error.h"

namespace strata::server {

nlohmann::json ApiError::to_json() const {
  auto opt = [](const std::string& s) { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); };
  return {{"error", {{"message", what()}, {"type", type}, {"param", opt(param)}, {"code", opt(code)}}}};
}

ApiError bad_request(std::string message, std::string param, std::string code) {
  return ApiError(400, std::move(message), "invalid_request_error", std::move(param), std::move(code));
}

ApiError unauthorized() {
  return ApiError(401, "Incorrect API key provided.", "invalid_request_error", "", "invalid_api_key");
}

ApiError model_not_found(const std::string& model) {
  return ApiError(404, "The model `" + model + "` does not exist.", "invalid_request_error", "model",
                  "model_not_found");
}

ApiError payload_too_large(size_t limit) {
  return ApiError(413, "Request body exceeds the limit of " + std::to_string(limit) + " bytes.",
                  "invalid_request_error", "", "request_too_large");
}

ApiError queue_full() {
  return ApiError(429, "The server is busy: the request queue is full; retry later.", "rate_limit_error", "",
                  "queue_full");
}

ApiError shutting_down_error() {
  return ApiError(503, "The server is shutting down.", "server_error", "", "shutting_down");
}

ApiError internal_error(std::string message) {
  return ApiError(500, std::move(message), "server_error", "", "internal_error");
}

ApiError unsupported_parameter(std::string param, std::string message) {
  return ApiError(400, std::move(message), "invalid_request_error", std::move(param), "unsupported_parameter");
}

ApiError unsupported_value(std::string param, std::string message) {
  return ApiError(400, std::move(message), "invalid_request_error", std::move(param), "unsupported_value");
}

}  // namespace strata::server
