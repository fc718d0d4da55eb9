#include "server/metrics_text.h"

#include <cmath>
#include <cstdio>

#include "core/numerics.h"
#include "server/journal.h"

namespace strata::server {
namespace {

std::string format_value(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(int64_t(v));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string escape_label(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

void header(std::string& out, const std::string& name, const char* type, const std::string& help) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void single(std::string& out, const std::string& name, const char* type, const std::string& help, double v) {
  header(out, name, type, help);
  out += metric_line(name, {}, v);
}

}  // namespace

std::string metric_line(const std::string& name, const std::vector<std::pair<std::string, std::string>>& labels,
                        double value) {
  std::string out = name;
  if (!labels.empty()) {
    out += "{";
    for (size_t i = 0; i < labels.size(); ++i)
      out += (i ? "," : "") + labels[i].first + "=\"" + escape_label(labels[i].second) + "\"";
    out += "}";
  }
  return out + " " + format_value(value) + "\n";
}

void write_histogram(std::string& out, const std::string& name, const std::string& help,
                     const engine::LatencyHistogram& h) {
  header(out, name, "histogram", help);
  const auto& bounds = engine::LatencyHistogram::bounds();
  uint64_t cum = 0;
  for (size_t i = 0; i <= bounds.size(); ++i) {
    cum += h.counts[i];
    std::string le = i < bounds.size() ? format_value(bounds[i]) : "+Inf";
    out += metric_line(name + "_bucket", {{"le", le}}, double(cum));
  }
  out += metric_line(name + "_sum", {}, h.sum);
  out += metric_line(name + "_count", {}, double(h.count));
}

void write_journal_metrics(std::string& out, const JournalStats& s) {
  single(out, "strata_journal_bytes_total", "counter", "bytes appended to the request journal", double(s.bytes));
  single(out, "strata_journal_records_total", "counter", "records appended to the request journal", double(s.records));
  single(out, "strata_journal_syncs_total", "counter", "fsyncs of the request journal", double(s.syncs));
  single(out, "strata_journal_compactions_total", "counter", "rewrites of the request journal", double(s.compactions));
}

void ServerMetrics::count_request(const std::string& route, int status) {
  std::lock_guard lk(mu_);
  ++requests_[{route, status}];
}

std::string ServerMetrics::render(const engine::EngineMetrics& m) {
  std::lock_guard lk(mu_);
  std::string out;
  // Info-style: the profile is a label, the value always 1, so dashboards can join on it.
  header(out, "strata_numerics_info", "gauge", "The numerics profile the engine computes with (exact or fast).");
  out += metric_line("strata_numerics_info", {{"profile", std::string(numerics_name(active_numerics()))}}, 1);
  header(out, "strata_http_requests_total", "counter", "HTTP requests answered, by route and status code.");
  for (const auto& [k, n] : requests_)
    out += metric_line("strata_http_requests_total", {{"route", k.first}, {"status", std::to_string(k.second)}}, double(n));
  single(out, "strata_requests_waiting", "gauge", "Engine requests waiting in the queue.", double(m.waiting));
  single(out, "strata_requests_running", "gauge", "Engine requests being prefilled or decoded.", double(m.running));
  header(out, "strata_engine_requests_total", "counter", "Engine requests ended, by outcome.");
  out += metric_line("strata_engine_requests_total", {{"outcome", "finished"}}, double(m.finished));
  out += metric_line("strata_engine_requests_total", {{"outcome", "cancelled"}}, double(m.cancelled));
  out += metric_line("strata_engine_requests_total", {{"outcome", "error"}}, double(m.errored));
  single(out, "strata_preemptions_total", "counter", "Requests preempted to free cache memory.", double(m.preempted));
  single(out, "strata_prompt_tokens_total", "counter", "Prompt tokens of submitted requests.", double(m.prompt_tokens));
  single(out, "strata_generation_tokens_total", "counter", "Tokens generated.", double(m.generated_tokens));
  single(out, "strata_recomputed_tokens_total", "counter", "Tokens computed again after preemption.",
         double(m.recomputed_tokens));
  single(out, "strata_prefix_cache_queries_total", "counter", "Prompt tokens looked up in the prefix cache.",
         double(m.prefix_lookup_tokens));
  single(out, "strata_prefix_cache_hits_total", "counter", "Prompt tokens found in the prefix cache.",
         double(m.prefix_hit_tokens));
  single(out, "strata_prefix_cache_hit_rate", "gauge", "Prefix-cache hits / queries (tokens) since start.",
         m.prefix_lookup_tokens > 0 ? double(m.prefix_hit_tokens) / double(m.prefix_lookup_tokens) : 0.0);
  single(out, "strata_prefix_cache_checkpoints", "gauge", "Prefix checkpoints held in the cache pool (a slot each).",
         double(m.prefix_checkpoints));
  single(out, "strata_prefix_cache_blocks", "gauge",
         "Cache-pool blocks referenced by prefix checkpoints (shared, counted once).", double(m.prefix_blocks));
  single(out, "strata_spec_rounds_total", "counter", "Speculative verification passes (one per drafting request and step).",
         double(m.spec_rounds));
  single(out, "strata_spec_draft_tokens_total", "counter", "Tokens drafted by the MTP block.", double(m.spec_drafted));
  single(out, "strata_spec_accepted_tokens_total", "counter", "Drafted tokens accepted by verification.",
         double(m.spec_accepted));
  single(out, "strata_spec_acceptance_rate", "gauge", "Accepted / drafted tokens since start.",
         m.spec_drafted > 0 ? double(m.spec_accepted) / double(m.spec_drafted) : 0.0);
  single(out, "strata_spec_mean_accepted_length", "gauge",
         "Tokens produced per verification pass (accepted drafts + the target's own token) since start.",
         m.spec_rounds > 0 ? double(m.spec_emitted) / double(m.spec_rounds) : 0.0);
  single(out, "strata_pool_bytes_total", "gauge", "Bytes of the cache memory pool.", double(m.pool_bytes_total));
  single(out, "strata_pool_workspace_bytes", "gauge",
         "Bytes of the pool's workspace beside the caches (the indexer's scratch, bounded at start).",
         double(m.pool_workspace_bytes));
  int64_t used = 0;
  header(out, "strata_pool_bytes_used", "gauge", "Pool bytes in use, by cache kind.");
  for (const auto& [kind, bytes] : m.pool_bytes_by_kind) {
    out += metric_line("strata_pool_bytes_used", {{"kind", kind}}, double(bytes));
    used += bytes;
  }
  single(out, "strata_pool_usage_ratio", "gauge", "Pool bytes in use / pool bytes.",
         m.pool_bytes_total > 0 ? double(used) / double(m.pool_bytes_total) : 0.0);
  write_histogram(out, "strata_time_to_first_token_seconds", "Time from arrival to the first generated token.", m.ttft);
  write_histogram(out, "strata_inter_token_latency_seconds", "Time between consecutive generated tokens of a request.",
                  m.itl);
  return out;
}

}  // namespace strata::server
