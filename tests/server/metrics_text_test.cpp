#include "server/metrics_text.h"

#include <gtest/gtest.h>

#include "core/numerics.h"
#include "server/journal.h"

namespace strata::server {
namespace {

bool has_line(const std::string& text, const std::string& line) { return text.find(line + "\n") != std::string::npos; }

TEST(MetricsText, HistogramIsCumulative) {
  engine::LatencyHistogram h;
  h.observe(0.05);
  h.observe(0.5);
  h.observe(0.5);
  h.observe(5);
  std::string out;
  write_histogram(out, "lat", "help", h);
  EXPECT_TRUE(has_line(out, "# TYPE lat histogram"));
  EXPECT_TRUE(has_line(out, "lat_bucket{le=\"0.025\"} 0"));
  EXPECT_TRUE(has_line(out, "lat_bucket{le=\"0.05\"} 1"));
  EXPECT_TRUE(has_line(out, "lat_bucket{le=\"0.5\"} 3"));
  EXPECT_TRUE(has_line(out, "lat_bucket{le=\"5\"} 4"));
  EXPECT_TRUE(has_line(out, "lat_bucket{le=\"+Inf\"} 4"));
  EXPECT_TRUE(has_line(out, "lat_sum 6.05"));
  EXPECT_TRUE(has_line(out, "lat_count 4"));
}

TEST(MetricsText, LabelsAreEscaped) {
  EXPECT_EQ(metric_line("m", {{"k", "a\"b\\c\nd"}}, 1.5), "m{k=\"a\\\"b\\\\c\\nd\"} 1.5\n");
  EXPECT_EQ(metric_line("m", {}, 3), "m 3\n");
}

TEST(MetricsText, RendersEngineAndServerMetrics) {
  ServerMetrics sm;
  sm.count_request("/v1/chat/completions", 200);
  sm.count_request("/v1/chat/completions", 200);
  sm.count_request("/v1/completions", 400);
  engine::EngineMetrics m;
  m.waiting = 3;
  m.running = 2;
  m.finished = 7;
  m.cancelled = 1;
  m.prompt_tokens = 100;
  m.generated_tokens = 50;
  m.prefix_lookup_tokens = 200;
  m.prefix_hit_tokens = 50;
  m.prefix_checkpoints = 2;
  m.prefix_blocks = 5;
  m.pool_bytes_total = 1000;
  m.pool_workspace_bytes = 640;
  m.pool_bytes_by_kind = {{"swa", 100}, {"csa", 150}};
  m.ttft.observe(0.02);
  m.ttft.observe(0.2);
  m.itl.observe(0.004);
  std::string t = sm.render(m);
  EXPECT_TRUE(has_line(t, "strata_http_requests_total{route=\"/v1/chat/completions\",status=\"200\"} 2"));
  EXPECT_TRUE(has_line(t, "strata_http_requests_total{route=\"/v1/completions\",status=\"400\"} 1"));
  EXPECT_TRUE(has_line(t, "strata_requests_waiting 3"));
  EXPECT_TRUE(has_line(t, "strata_requests_running 2"));
  EXPECT_TRUE(has_line(t, "strata_engine_requests_total{outcome=\"cancelled\"} 1"));
  EXPECT_TRUE(has_line(t, "strata_prompt_tokens_total 100"));
  EXPECT_TRUE(has_line(t, "strata_generation_tokens_total 50"));
  EXPECT_TRUE(has_line(t, "strata_prefix_cache_hit_rate 0.25"));
  EXPECT_TRUE(has_line(t, "strata_prefix_cache_checkpoints 2"));
  EXPECT_TRUE(has_line(t, "strata_prefix_cache_blocks 5"));
  EXPECT_TRUE(has_line(t, "strata_pool_bytes_used{kind=\"csa\"} 150"));
  EXPECT_TRUE(has_line(t, "strata_pool_usage_ratio 0.25"));
  EXPECT_TRUE(has_line(t, "strata_pool_workspace_bytes 640"));
  EXPECT_TRUE(has_line(t, "strata_time_to_first_token_seconds_count 2"));
  EXPECT_TRUE(has_line(t, "strata_inter_token_latency_seconds_count 1"));
  // the engine's histograms are cumulative: a scrape consumes nothing
  EXPECT_TRUE(has_line(sm.render(m), "strata_time_to_first_token_seconds_count 2"));
  // every sample line belongs to a declared metric
  for (size_t p = 0; p < t.size();) {
    size_t e = t.find('\n', p);
    std::string line = t.substr(p, e - p);
    p = e + 1;
    if (line.empty() || line[0] == '#') continue;
    std::string name = line.substr(0, line.find_first_of("{ "));
    for (const char* suf : {"_bucket", "_sum", "_count"})
      if (name.size() > strlen(suf) && name.compare(name.size() - strlen(suf), strlen(suf), suf) == 0 &&
          t.find("# TYPE " + name.substr(0, name.size() - strlen(suf)) + " histogram") != std::string::npos)
        name = name.substr(0, name.size() - strlen(suf));
    EXPECT_NE(t.find("# TYPE " + name + " "), std::string::npos) << line;
  }
}

// The profile the process computes with, as an info gauge: a label, value 1, one line.
TEST(MetricsText, JournalCountersAreWholeNumbers) {
  JournalStats js;
  js.bytes = 123456789012, js.records = 7, js.syncs = 3, js.compactions = 0;
  std::string out;
  write_journal_metrics(out, js);
  EXPECT_EQ(out,
            "# HELP strata_journal_bytes_total bytes appended to the request journal\n"
            "# TYPE strata_journal_bytes_total counter\n"
            "strata_journal_bytes_total 123456789012\n"
            "# HELP strata_journal_records_total records appended to the request journal\n"
            "# TYPE strata_journal_records_total counter\n"
            "strata_journal_records_total 7\n"
            "# HELP strata_journal_syncs_total fsyncs of the request journal\n"
            "# TYPE strata_journal_syncs_total counter\n"
            "strata_journal_syncs_total 3\n"
            "# HELP strata_journal_compactions_total rewrites of the request journal\n"
            "# TYPE strata_journal_compactions_total counter\n"
            "strata_journal_compactions_total 0\n");
}

TEST(MetricsText, NumericsProfileIsAnInfoGauge) {
  ServerMetrics sm;
  for (Numerics n : {Numerics::fast, Numerics::exact}) {
    ScopedNumerics scoped(n);
    const std::string t = sm.render(engine::EngineMetrics{});
    const std::string name(numerics_name(n)), other(numerics_name(n == Numerics::fast ? Numerics::exact : Numerics::fast));
    EXPECT_TRUE(has_line(t, "# TYPE strata_numerics_info gauge")) << t;
    EXPECT_TRUE(has_line(t, "strata_numerics_info{profile=\"" + name + "\"} 1")) << t;
    EXPECT_EQ(t.find("strata_numerics_info{profile=\"" + other + "\"}"), std::string::npos) << t;
  }
}

}  // namespace
}  // namespace strata::server
