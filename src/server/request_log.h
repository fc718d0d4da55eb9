// One log line per HTTP request, and one more per error with its message (`--log-format`):
//   text: 2025-01-02T03:04:05.678Z INFO request id=chatcmpl-... method=POST path=/v1/chat/completions
//         status=200 prompt_tokens=12 completion_tokens=8 cached_tokens=0 ttft_ms=31.2
//         total_ms=204.9 tokens_per_s=45.3 finish=length outcome=ok
//   json: {"time":"...","level":"info","event":"request","id":"chatcmpl-...",...}
// (one line each). Fields a request does not have (tokens of a /health call) are left out.
// Lines go to a sink, stderr by default, written whole so that concurrent lines never mix.
#pragma once
#include <functional>
#include <optional>
#include <string>

namespace strata::server {

enum class LogFormat { text, json, off };

// "text" / "json" / "off"; throws strata::Error for anything else.
LogFormat parse_log_format(const std::string& s);

struct RequestRecord {
  std::string id, method, path;
  int status = 0;
  std::optional<int64_t> prompt_tokens, completion_tokens, cached_tokens;
  std::optional<double> ttft_ms;
  double total_ms = 0;
  std::string finish;   // finish reasons of the choices, comma-separated
  std::string outcome;  // ok | error | cancelled (the client went away) | "" (not a completion)
};

struct ErrorRecord {
  std::string id, method, path;
  int status = 0;
  std::string type, code, param, message;
};

class RequestLog {
 public:
  using Sink = std::function<void(const std::string& line)>;  // without the newline
  explicit RequestLog(LogFormat format = LogFormat::text, Sink sink = {});  // default: stderr

  void request(const RequestRecord& r) const;
  void error(const ErrorRecord& e) const;

  // The line for a record (tests).
  std::string format(const RequestRecord& r) const;
  std::string format(const ErrorRecord& e) const;

 private:
  LogFormat format_;
  Sink sink_;
};

}  // namespace strata::server
