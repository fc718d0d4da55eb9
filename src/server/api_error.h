// An error answered to an HTTP client in OpenAI's shape:
// {"error":{"message":...,"type":...,"param":...,"code":...}} with an HTTP status.
// Handlers throw ApiError; the route wrapper turns it (and any strata::Error) into a response,
// so one request's bad input never reaches another request or the process.
#pragma once
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace strata::server {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string message, std::string type = "invalid_request_error", std::string param = "",
           std::string code = "")
      : std::runtime_error(message), status(status), type(std::move(type)), param(std::move(param)),
        code(std::move(code)) {}

  int status;
  std::string type, param, code;  // empty param / code are written as null

  nlohmann::json to_json() const;
};

// The common cases, with OpenAI's types and codes.
ApiError bad_request(std::string message, std::string param = "", std::string code = "");
ApiError unauthorized();
ApiError model_not_found(const std::string& model);
ApiError payload_too_large(size_t limit);
ApiError queue_full();
ApiError shutting_down_error();
ApiError internal_error(std::string message);
// 400s for what strata does not do, with OpenAI's codes: a parameter it has no support for at
// all, and a value of a parameter it otherwise accepts.
ApiError unsupported_parameter(std::string param, std::string message);
ApiError unsupported_value(std::string param, std::string message);

}  // namespace strata::server
