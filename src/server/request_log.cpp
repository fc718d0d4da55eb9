#include "server/request_log.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "core/error.h"

namespace strata::server {
namespace {

using ojson = nlohmann::ordered_json;

std::string utc_now() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const int ms = int(std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[80];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
  return buf;
}

std::string fixed1(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// logfmt: bare when it is one plain word, else quoted with \" \\ \n escaped.
std::string text_value(const std::string& v) {
  bool bare = !v.empty();
  for (unsigned char c : v) bare = bare && c > ' ' && c != '"' && c != '=' && c != '\\' && c < 0x7f;
  if (bare) return v;
  std::string out = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else out += c;
  }
  return out + "\"";
}

// Fields in order; a null value is left out.
std::string render(LogFormat f, const char* level, const char* event, const std::vector<std::pair<const char*, ojson>>& kv) {
  if (f == LogFormat::json) {
    ojson j = {{"time", utc_now()}, {"level", level}, {"event", event}};
    for (const auto& [k, v] : kv)
      if (!v.is_null()) j[k] = v;
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  std::string line = utc_now() + " " + (std::string(level) == "info" ? "INFO" : std::string(level) == "warn" ? "WARN" : "ERROR") +
                     " " + event;
  for (const auto& [k, v] : kv) {
    if (v.is_null()) continue;
    line += std::string(" ") + k + "=";
    if (v.is_string()) line += text_value(v.get<std::string>());
    else if (v.is_number_float()) line += fixed1(v.get<double>());
    else line += v.dump();
  }
  return line;
}

ojson opt(const std::string& s) { return s.empty() ? ojson(nullptr) : ojson(s); }
template <class T>
ojson opt(const std::optional<T>& v) {
  return v ? ojson(*v) : ojson(nullptr);
}
// Milliseconds to 0.1 ms, the same in both formats.
ojson ms(double v) { return std::round(v * 10) / 10; }

}  // namespace

LogFormat parse_log_format(const std::string& s) {
  if (s == "text") return LogFormat::text;
  if (s == "json") return LogFormat::json;
  if (s == "off") return LogFormat::off;
  throw Error("--log-format must be text, json or off; got \"" + s + "\"");
}

RequestLog::RequestLog(LogFormat format, Sink sink) : format_(format), sink_(std::move(sink)) {
  if (!sink_)
    sink_ = [](const std::string& line) {
      const std::string l = line + "\n";
      std::fwrite(l.data(), 1, l.size(), stderr);  // stderr is unbuffered: one write per line
    };
}

std::string RequestLog::format(const RequestRecord& r) const {
  ojson tps = nullptr;
  if (r.ttft_ms && r.completion_tokens && *r.completion_tokens > 1 && r.total_ms > *r.ttft_ms)
    tps = std::round(double(*r.completion_tokens - 1) / ((r.total_ms - *r.ttft_ms) / 1000.0) * 10) / 10;
  return render(format_, "info", "request",
                {{"id", opt(r.id)},
                 {"method", r.method},
                 {"path", r.path},
                 {"status", r.status},
                 {"prompt_tokens", opt(r.prompt_tokens)},
                 {"completion_tokens", opt(r.completion_tokens)},
                 {"cached_tokens", opt(r.cached_tokens)},
                 {"ttft_ms", r.ttft_ms ? ms(*r.ttft_ms) : ojson(nullptr)},
                 {"total_ms", ms(r.total_ms)},
                 {"tokens_per_s", tps},
                 {"finish", opt(r.finish)},
                 {"outcome", opt(r.outcome)}});
}

std::string RequestLog::format(const ErrorRecord& e) const {
  return render(format_, e.status >= 500 ? "error" : "warn", "error",
                {{"id", opt(e.id)},
                 {"method", e.method},
                 {"path", e.path},
                 {"status", e.status},
                 {"type", opt(e.type)},
                 {"code", opt(e.code)},
                 {"param", opt(e.param)},
                 {"message", e.message}});
}

void RequestLog::request(const RequestRecord& r) const {
  if (format_ != LogFormat::off) sink_(format(r));
}

void RequestLog::error(const ErrorRecord& e) const {
  if (format_ != LogFormat::off) sink_(format(e));
}

}  // namespace strata::server
