// /metrics in the Prometheus text exposition format (version 0.0.4).
//
// The engine keeps the latency histograms (cumulative, engine/latency_histogram.h); the server
// keeps HTTP request counts of its own.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "engine/engine.h"

namespace strata::server {

struct JournalStats;

class ServerMetrics {
 public:
  // An answered HTTP request (route as registered, e.g. "/v1/chat/completions").
  void count_request(const std::string& route, int status);
  // Renders everything.
  std::string render(const engine::EngineMetrics& m);

 private:
  std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
};

// With --journal: what journaling writes (strata_journal_{bytes,records,syncs,compactions}_total);
// its cost per token is bytes / generated tokens.
void write_journal_metrics(std::string& out, const JournalStats& s);

// A histogram's "<name>_bucket{le=...} n" lines (cumulative), _sum and _count.
void write_histogram(std::string& out, const std::string& name, const std::string& help,
                     const engine::LatencyHistogram& h);

// Exposed for tests: one sample line, label values escaped.
std::string metric_line(const std::string& name, const std::vector<std::pair<std::string, std::string>>& labels,
                        double value);

}  // namespace strata::server
