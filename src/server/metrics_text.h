// /metrics in the Prometheus text exposition format (version 0.0.4).
//
// The engine reports latency samples only since its last metrics() call, so the server keeps
// cumulative histograms (ServerMetrics::absorb) and HTTP request counts of its own.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "engine/engine.h"

namespace strata::server {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);  // upper bounds, increasing; +Inf is implied
  void observe(double v);
  // "<name>_bucket{le=...} n" lines (cumulative), _sum and _count.
  void write(std::string& out, const std::string& name, const std::string& help) const;
  uint64_t count() const { return count_; }

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative; last = +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

class ServerMetrics {
 public:
  ServerMetrics();
  // An answered HTTP request (route as registered, e.g. "/v1/chat/completions").
  void count_request(const std::string& route, int status);
  // Renders everything; feeds the engine's new latency samples into the histograms first.
  std::string render(const engine::EngineMetrics& m);

 private:
  std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  Histogram ttft_, itl_;
};

// Exposed for tests: one sample line, label values escaped.
std::string metric_line(const std::string& name, const std::vector<std::pair<std::string, std::string>>& labels,
                        double value);

}  // namespace strata::server
