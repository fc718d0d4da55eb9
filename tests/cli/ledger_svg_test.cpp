// `strata ledger --svg`: the drawing as a pure function (well-formed, one line per config, the
// plotted points mapping back to the series' bytes), and end to end through the binary on the
// published configs it loads: the chart's points are the ledger's own bytes, a bad path fails
// cleanly, and the text and JSON outputs are what they were before the chart existed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/ledger_svg.h"
#include "core/error.h"
#include "run_command.h"

namespace strata {
namespace {
namespace fs = std::filesystem;
using cli::LedgerChart;
using cli::LedgerSeries;
using test::run_strata;
using test::shell_quote;

const std::string kShared = STRATA_SHARED_DIR;
std::string config(const std::string& name) { return kShared + "/models/" + name + "/config.json"; }
// The published configs this build loads (`strata ledger --config` on each; DeepSeek-V3.2 and
// the Kimi models are model_types it does not read).
const char* kModels[] = {"deepseek-v4-flash", "deepseek-v4-pro", "qwen3.5-0.8b"};

// Well-formedness at the level the chart needs: every tag closed in order, one <svg> root with
// nothing after it, no scripts, nothing fetched from elsewhere. Returns "" or what is wrong.
std::string xml_problem(const std::string& s) {
  std::vector<std::string> open;
  size_t i = 0, roots = 0;
  if (s.rfind("<?xml", 0) == 0) i = s.find("?>") + 2;
  while ((i = s.find('<', i)) != std::string::npos) {
    const size_t end = s.find('>', i);
    if (end == std::string::npos) return "unterminated tag";
    const std::string tag = s.substr(i + 1, end - i - 1);
    i = end + 1;
    if (tag.empty()) return "empty tag";
    if (tag[0] == '/') {
      if (open.empty() || open.back() != tag.substr(1)) return "</" + tag.substr(1) + "> closes nothing open";
      open.pop_back();
      continue;
    }
    const std::string name = tag.substr(0, tag.find_first_of(" \n/"));
    if (open.empty()) {
      if (name != "svg" || ++roots > 1) return "a second root or a root other than <svg>: " + name;
    }
    if (tag.back() != '/') open.push_back(name);
  }
  if (!open.empty()) return "<" + open.back() + "> never closed";
  if (roots != 1) return "no <svg> root";
  for (const char* bad : {"<script", "href", "@import", "url("})
    if (s.find(bad) != std::string::npos) return std::string("contains ") + bad;
  return "";
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t i = s.find(what); i != std::string::npos; i = s.find(what, i + 1)) ++n;
  return n;
}

// The (x, y) points of each series' polyline, in order.
std::vector<std::vector<std::pair<double, double>>> series_points(const std::string& svg) {
  std::vector<std::vector<std::pair<double, double>>> all;
  const std::regex line("<polyline class=\"series\"[^>]* points=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), line); it != std::sregex_iterator(); ++it) {
    std::vector<std::pair<double, double>> pts;
    std::istringstream in((*it)[1].str());
    std::string xy;
    while (in >> xy) pts.emplace_back(std::stod(xy.substr(0, xy.find(','))), std::stod(xy.substr(xy.find(',') + 1)));
    all.push_back(pts);
  }
  return all;
}

// The markers' tooltips: "label: N tokens, B bytes (...)" -> (label, N) -> B.
std::map<std::pair<std::string, int64_t>, int64_t> marker_bytes(const std::string& svg) {
  std::map<std::pair<std::string, int64_t>, int64_t> m;
  const std::regex title("<circle class=\"point\"[^>]*><title>(.*?): ([0-9]+) tokens, ([0-9]+) bytes");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), title); it != std::sregex_iterator(); ++it)
    m[{(*it)[1].str(), std::stoll((*it)[2].str())}] = std::stoll((*it)[3].str());
  return m;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

LedgerSeries line(const std::string& label, int64_t fixed, int64_t per_token, int64_t max_context) {
  LedgerSeries s;
  s.label = label;
  s.contexts = cli::ledger_sample_contexts(1024, max_context);
  for (int64_t n : s.contexts) s.bytes.push_back(fixed + per_token * n);
  return s;
}

TEST(LedgerSvg, SampleContextsCoverTheAxis) {
  const auto c = cli::ledger_sample_contexts(1024, 163840, 8);
  ASSERT_GE(c.size(), 8u * 7);
  EXPECT_EQ(c.front(), 1024);
  EXPECT_EQ(c.back(), 163840);
  for (size_t i = 1; i < c.size(); ++i) EXPECT_LT(c[i - 1], c[i]);
  for (int64_t p = 1024; p < 163840; p *= 2) EXPECT_TRUE(std::binary_search(c.begin(), c.end(), p)) << p;
  EXPECT_THROW(cli::ledger_sample_contexts(0, 10), Error);
  EXPECT_THROW(cli::ledger_sample_contexts(20, 10), Error);
}

TEST(LedgerSvg, HumanUnits) {
  EXPECT_EQ(cli::human_tokens(1024), "1K");
  EXPECT_EQ(cli::human_tokens(131072), "128K");
  EXPECT_EQ(cli::human_tokens(163840), "160K");
  EXPECT_EQ(cli::human_tokens(1048576), "1M");
  EXPECT_EQ(cli::human_tokens(1000), "1000");
  EXPECT_EQ(cli::human_bytes(512), "512 B");
  EXPECT_EQ(cli::human_bytes(15420416), "14.71 MiB");
  EXPECT_EQ(cli::human_bytes(1.5 * (1ull << 30)), "1.50 GiB");
}

TEST(LedgerSvg, OneLinePerConfigWhosePointsMapBackToItsBytes) {
  LedgerChart chart;
  chart.title = "three <configs> & more";
  chart.series = {line("a & b", 15 << 20, 3850, 1 << 20), line("c", 20 << 20, 12288, 262144),
                  line("d", 400 << 20, 27648, 1 << 20)};
  const std::string svg = cli::ledger_svg(chart);
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_NE(svg.find("three &lt;configs&gt; &amp; more"), std::string::npos);
  EXPECT_NE(svg.find("version=\"1.1\""), std::string::npos);
  EXPECT_EQ(count(svg, "<polygon"), 0u);  // several configs: lines, no stacked kinds
  const auto lines = series_points(svg);
  ASSERT_EQ(lines.size(), 3u);
  const auto f = cli::ledger_frame(chart);
  EXPECT_EQ(f.x_lo, 1024);
  EXPECT_EQ(f.x_hi, 1 << 20);
  EXPECT_GE(f.y_max, double(chart.series[2].bytes.back()));
  // The coordinates carry two decimals: a hundredth of a unit on each axis.
  const double y_tol = 0.006 * f.y_max / f.height, x_tol = 0.006 / f.width * std::log2(double(f.x_hi) / double(f.x_lo));
  for (size_t i = 0; i < 3; ++i) {
    const auto& s = chart.series[i];
    ASSERT_EQ(lines[i].size(), s.contexts.size());
    for (size_t j = 0; j < s.contexts.size(); ++j) {
      EXPECT_NEAR(std::log2(f.context_at(lines[i][j].first) / double(s.contexts[j])), 0, x_tol) << i << " " << j;
      EXPECT_NEAR(f.bytes_at(lines[i][j].second), double(s.bytes[j]), y_tol) << i << " " << j;
      if (j) {
        EXPECT_GT(lines[i][j].first, lines[i][j - 1].first);    // context grows rightwards
        EXPECT_LE(lines[i][j].second, lines[i][j - 1].second);  // and memory upwards
      }
    }
  }
  // "c" stops at its own maximum, short of the right edge.
  EXPECT_NEAR(lines[1].back().first, f.x(262144), 0.01);
  EXPECT_LT(lines[1].back().first, lines[0].back().first);
  const auto marks = marker_bytes(svg);
  EXPECT_EQ(marks.at({"a &amp; b", 131072}), chart.series[0].bytes[std::find(chart.series[0].contexts.begin(),
                                                                            chart.series[0].contexts.end(), 131072) -
                                                                  chart.series[0].contexts.begin()]);
  EXPECT_EQ(marks.at({"c", 262144}), 20 * (1 << 20) + int64_t(12288) * 262144);
}

TEST(LedgerSvg, OneConfigIsStackedByKindUpToItsTotal) {
  LedgerSeries s = line("one", 0, 0, 65536);
  s.bytes.clear();
  s.kinds = {{"grows", {}}, {"fixed", {}}};
  for (int64_t n : s.contexts) {
    s.kinds[0].bytes.push_back(1000 * n);
    s.kinds[1].bytes.push_back(50 << 20);
    s.bytes.push_back(1000 * n + (50 << 20));
  }
  const std::string svg = cli::ledger_svg({"one config", {s}});
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_EQ(count(svg, "<polygon class=\"kind\""), 2u);
  EXPECT_EQ(count(svg, "<polyline class=\"series\""), 1u);
  // The fixed kind is the bottom band: its polygon comes first.
  EXPECT_LT(svg.find("<title>fixed</title>"), svg.find("<title>grows</title>"));
}

TEST(LedgerSvg, RefusesWhatItCannotDraw) {
  EXPECT_THROW(cli::ledger_svg({}), Error);
  LedgerSeries s = line("x", 1, 1, 4096);
  s.bytes.pop_back();
  EXPECT_THROW(cli::ledger_svg({"t", {s}}), Error);
  s = line("x", 1, 1, 4096);
  std::swap(s.contexts[0], s.contexts[1]);
  EXPECT_THROW(cli::ledger_svg({"t", {s}}), Error);
}

std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / ("strata_ledger_svg_" + std::to_string(::getpid()) + "_" + name)).string();
}

// The ledger's own bytes per request at these contexts, from its --json output.
std::map<int64_t, int64_t> ledger_bytes(const std::string& model, const std::vector<int64_t>& contexts) {
  std::string args = "ledger --json --config " + shell_quote(config(model)) + " --context";
  for (int64_t n : contexts) args += " " + std::to_string(n);
  auto r = run_strata(args);
  EXPECT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);  // kept: a range-for over a temporary's member would dangle
  std::map<int64_t, int64_t> m;
  for (const auto& row : j["contexts"]) m[row["context"].get<int64_t>()] = row["bytes"].get<int64_t>();
  return m;
}

int64_t ledger_bytes_at(const std::string& model, int64_t context) {
  return ledger_bytes(model, std::vector<int64_t>(1, context))[context];
}

TEST(LedgerSvgCli, EachPublishedConfigStackedByKindWithTheLedgersBytes) {
  for (const char* model : kModels) {
    const std::string out = temp_path(std::string(model) + ".svg");
    auto r = run_strata("ledger --svg " + shell_quote(out) + " --config " + shell_quote(config(model)));
    ASSERT_EQ(r.code, 0) << r.err;
    const std::string svg = slurp(out);
    fs::remove(out);
    EXPECT_EQ(xml_problem(svg), "") << model;
    const auto j = nlohmann::json::parse(run_strata("ledger --json --config " + shell_quote(config(model))).out);
    EXPECT_EQ(count(svg, "<polygon class=\"kind\""), j["by_kind"].size()) << model;
    const auto lines = series_points(svg);
    ASSERT_EQ(lines.size(), 1u) << model;
    const std::string label = std::string(model) + " (" +
                              (std::string(model) == "qwen3.5-0.8b" ? "qwen3_5_text" : "deepseek_v4") + ")";
    const auto marks = marker_bytes(svg);
    const auto want = ledger_bytes(model, {1024, 4096, 131072, 262144});
    for (auto [n, bytes] : want) EXPECT_EQ(marks.at({label, n}), bytes) << model << " at " << n;
    // The line runs from 1K to the config's maximum, upwards.
    for (size_t k = 1; k < lines[0].size(); ++k) EXPECT_LE(lines[0][k].second, lines[0][k - 1].second) << model;
  }
}

TEST(LedgerSvgCli, SeveralConfigsShareOneChart) {
  const std::string out = temp_path("all.svg");
  std::string args = "ledger --svg " + shell_quote(out);
  for (const char* model : kModels) args += " --config " + shell_quote(config(model));
  auto r = run_strata(args);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string svg = slurp(out);
  fs::remove(out);
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_EQ(count(svg, "<polygon"), 0u);
  const auto lines = series_points(svg);
  ASSERT_EQ(lines.size(), 3u);
  // Legend order is command-line order; Qwen3.5 stops at 256K, the V4 lines reach 1M.
  EXPECT_LT(svg.find("deepseek-v4-flash (deepseek_v4)"), svg.find("deepseek-v4-pro (deepseek_v4)"));
  EXPECT_LT(svg.find("deepseek-v4-pro (deepseek_v4)"), svg.find("qwen3.5-0.8b (qwen3_5_text)"));
  EXPECT_NEAR(lines[0].back().first, lines[1].back().first, 0.01);
  EXPECT_LT(lines[2].back().first, lines[0].back().first);
  const auto marks = marker_bytes(svg);
  EXPECT_EQ(marks.at({"deepseek-v4-flash (deepseek_v4)", 131072}), ledger_bytes_at("deepseek-v4-flash", 131072));
  EXPECT_EQ(marks.at({"deepseek-v4-pro (deepseek_v4)", 1048576}), ledger_bytes_at("deepseek-v4-pro", 1048576));
  EXPECT_EQ(marks.at({"qwen3.5-0.8b (qwen3_5_text)", 262144}), ledger_bytes_at("qwen3.5-0.8b", 262144));
  // Pro holds more than Flash at every context (same x, higher line means smaller y).
  ASSERT_EQ(lines[0].size(), lines[1].size());
  for (size_t k = 0; k < lines[0].size(); ++k) EXPECT_LT(lines[1][k].second, lines[0][k].second);
}

TEST(LedgerSvgCli, ABadPathFailsCleanlyAndLeavesNothing) {
  const std::string dir = temp_path("dir");
  fs::create_directories(dir);
  for (const std::string& path : {dir + "/no/such/folder/chart.svg", dir}) {
    auto r = run_strata("ledger --svg " + shell_quote(path) + " --config " + shell_quote(config("deepseek-v4-flash")));
    EXPECT_NE(r.code, 0) << path;
    EXPECT_NE(r.err.find("cannot write '" + path + "'"), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");  // the chart is written before anything is printed
  }
  EXPECT_TRUE(fs::is_empty(dir));  // no temporary file left behind
  fs::remove_all(dir);
}

// What `strata ledger` printed before --svg existed, byte for byte.
TEST(LedgerSvgCli, TheTextAndJsonOutputsAreUnchanged) {
  auto r = run_strata("ledger --config " + shell_quote(config("deepseek-v4-flash")));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out,
            "../shared/models/deepseek-v4-flash/config.json: 3850.2 B per token (3.76 KB), 14.71 MB fixed per request; "
            "blocks of 128 tokens = 492832 B; indexer keys fp8\n"
            "  compressed         41 specs  448 e4m3 + 7 e8m0 + 64 bf16          fixed      0.00 MB  per block    404128 B\n"
            "  compressor_state   62 specs  fp32 kv + score, 8 x 1024            fixed     11.64 MB  per block         0 B\n"
            "  indexer_keys       21 specs  128 e4m3 + 4 e8m0                    fixed      0.00 MB  per block     88704 B\n"
            "  sliding_window     43 specs  448 e4m3 + 7 e8m0 + 64 bf16          fixed      3.07 MB  per block         0 B\n"
            "context    131072:    0.520 GB =   0.484 GiB per request (whole blocks; exact 0.484 GiB)\n"
            "context   1048576:    4.053 GB =   3.774 GiB per request (whole blocks; exact 3.774 GiB)\n"
            "(layer-by-layer §9.2 counts 576-byte entries without scale bytes and 64-byte FP4 index keys, no "
            "compressor state: 3.62 GB at 1048576 tokens by that accounting)\n");
  const std::string qwen = "--context 4096 --memory 24G --spec-tokens 2 --config " + shell_quote(config("qwen3.5-0.8b"));
  r = run_strata("ledger " + qwen);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string qwen_text =
      "../shared/models/qwen3.5-0.8b/config.json: 14336.0 B per token (14.00 KB), 55.90 MB fixed per request; blocks "
      "of 128 tokens = 1835008 B; 37.27 MB of the fixed bytes are draft slots for 2 speculative tokens\n"
      "  full_attention      7 specs  K + V, 2 x 256 bf16                  fixed      0.00 MB  per block   1835008 B\n"
      "  linear_state       18 specs  fp32 16x128x128 + bf16 conv 3x6144   fixed     55.90 MB  per block         0 B\n"
      "context      4096:    0.117 GB =   0.109 GiB per request (whole blocks; exact 0.109 GiB); 219 fit in 24G\n";
  EXPECT_EQ(r.out, qwen_text);
  const std::string pro = "--json --context 4096 --indexer-cache fp4 --config " + shell_quote(config("deepseek-v4-pro"));
  r = run_strata("ledger " + pro);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto pro_json = nlohmann::ordered_json::parse(R"({"indexer_cache": "fp4", "block_tokens": 128,
      "bytes_per_token": 5031.4375, "fixed_bytes": 23270400, "block_bytes": 644024, "by_kind": {
      "compressed": {"specs": 61, "format": "448 e4m3 + 7 e8m0 + 64 bf16", "fixed_bytes": 0, "bytes_per_block": 578744},
      "compressor_state": {"specs": 91, "format": "fp32 kv + score, 128 x 512", "fixed_bytes": 18710528, "bytes_per_block": 0},
      "indexer_keys": {"specs": 30, "format": "128 e2m1 + 4 e8m0", "fixed_bytes": 0, "bytes_per_block": 65280},
      "sliding_window": {"specs": 61, "format": "448 e4m3 + 7 e8m0 + 64 bf16", "fixed_bytes": 4559872, "bytes_per_block": 0}},
      "contexts": [{"context": 4096, "bytes": 43879168, "bytes_exact": 43879168, "paper_9_2_bytes": 24729600}]})");
  EXPECT_EQ(r.out, pro_json.dump(2) + "\n");
  // --svg adds a file and changes nothing printed.
  const std::string out = temp_path("same.svg");
  auto with_svg = run_strata("ledger --svg " + shell_quote(out) + " " + qwen);
  fs::remove(out);
  EXPECT_EQ(with_svg.code, 0) << with_svg.err;
  EXPECT_EQ(with_svg.out, qwen_text);
}

// Several configs without --svg: each printed in turn (a blank line between), or with --json
// one array of the single-config objects, each led by its "source".
TEST(LedgerSvgCli, SeveralConfigsPrintEachInTurn) {
  const std::string flash = "--config " + shell_quote(config("deepseek-v4-flash"));
  const std::string qwen = "--config " + shell_quote(config("qwen3.5-0.8b"));
  const auto a = run_strata("ledger --context 4096 " + flash), b = run_strata("ledger --context 4096 " + qwen);
  const auto both = run_strata("ledger --context 4096 " + flash + " " + qwen);
  ASSERT_EQ(both.code, 0) << both.err;
  EXPECT_EQ(both.out, a.out + "\n" + b.out);
  const auto arr = nlohmann::ordered_json::parse(run_strata("ledger --json --context 4096 " + qwen + " " + flash).out);
  ASSERT_EQ(arr.size(), 2u);
  EXPECT_EQ(arr[0]["source"], config("qwen3.5-0.8b"));
  auto first = arr[0];
  first.erase("source");
  EXPECT_EQ(first, nlohmann::ordered_json::parse(run_strata("ledger --json --context 4096 " + qwen).out));
  // A context past one config's maximum fails the whole command, naming the limit.
  const auto bad = run_strata("ledger --context 524288 " + flash + " " + qwen);
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.err.find("exceeds max_position_embeddings 262144"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace strata
