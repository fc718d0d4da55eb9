#include "cli/ledger_svg.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>

#include "core/error.h"

namespace strata::cli {
namespace {

constexpr double kWidth = 820, kHeight = 500;
constexpr double kLeft = 80, kRight = 24, kTop = 48, kBottom = 58;
// Tableau 10: distinct in print and for the common colour blindnesses.
constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
constexpr size_t kColours = sizeof(kPalette) / sizeof(kPalette[0]);

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string num(double v) { return fmt("%.2f", v); }

std::string escape(const std::string& s) {
  std::string r;
  for (char c : s) {
    switch (c) {
      case '&': r += "&amp;"; break;
      case '<': r += "&lt;"; break;
      case '>': r += "&gt;"; break;
      case '"': r += "&quot;"; break;
      case '\'': r += "&apos;"; break;
      default: r += c;
    }
  }
  return r;
}

bool power_of_two(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

void check(const LedgerChart& chart) {
  if (chart.series.empty()) throw Error("ledger chart: no configs to draw");
  for (const auto& s : chart.series) {
    if (s.contexts.empty() || s.contexts.size() != s.bytes.size())
      throw Error("ledger chart: series '" + s.label + "' has no points or mismatched contexts and bytes");
    for (size_t i = 0; i < s.contexts.size(); ++i)
      if (s.contexts[i] <= 0 || (i > 0 && s.contexts[i] <= s.contexts[i - 1]))
        throw Error("ledger chart: series '" + s.label + "' contexts must be positive and ascending");
    for (const auto& k : s.kinds)
      if (k.bytes.size() != s.contexts.size())
        throw Error("ledger chart: kind '" + k.kind + "' of '" + s.label + "' has the wrong number of points");
  }
}

std::string polyline_points(const LedgerFrame& f, const std::vector<int64_t>& x, const std::vector<double>& y) {
  std::string p;
  for (size_t i = 0; i < x.size(); ++i) p += (i ? " " : "") + num(f.x(double(x[i]))) + "," + num(f.y(y[i]));
  return p;
}

void text(std::string& o, double x, double y, const std::string& s, const std::string& attrs = "") {
  o += "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\"" + (attrs.empty() ? "" : " " + attrs) + ">" + escape(s) +
       "</text>\n";
}

void axes(std::string& o, const LedgerFrame& f) {
  const double bottom = f.top + f.height, right = f.left + f.width;
  o += "<g class=\"grid\" stroke=\"#e4e4e4\" stroke-width=\"1\">\n";
  const int y_ticks = int(std::lround(f.y_max / f.y_step));
  for (int k = 1; k <= y_ticks; ++k)
    o += "<line x1=\"" + num(f.left) + "\" y1=\"" + num(f.y(k * f.y_step)) + "\" x2=\"" + num(right) + "\" y2=\"" +
         num(f.y(k * f.y_step)) + "\"/>\n";
  std::vector<int64_t> pows;
  for (int64_t p = 1; p <= f.x_hi && p > 0; p *= 2)
    if (p >= f.x_lo) pows.push_back(p);
  for (int64_t p : pows)
    o += "<line x1=\"" + num(f.x(double(p))) + "\" y1=\"" + num(f.top) + "\" x2=\"" + num(f.x(double(p))) + "\" y2=\"" +
         num(bottom) + "\"/>\n";
  o += "</g>\n<g class=\"axes\" stroke=\"#333\" stroke-width=\"1\">\n";
  o += "<line x1=\"" + num(f.left) + "\" y1=\"" + num(bottom) + "\" x2=\"" + num(right) + "\" y2=\"" + num(bottom) + "\"/>\n";
  o += "<line x1=\"" + num(f.left) + "\" y1=\"" + num(f.top) + "\" x2=\"" + num(f.left) + "\" y2=\"" + num(bottom) + "\"/>\n";
  o += "</g>\n<g class=\"ticks\" font-size=\"11\" fill=\"#333\">\n";
  // y: multiples of the step in one unit, so labels read 0, 0.5 GiB, 1 GiB rather than mixing units.
  static const char* unit_names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  const char* unit = unit_names[std::clamp(int(std::lround(std::log2(f.y_unit) / 10)), 0, 4)];
  for (int k = 0; k <= y_ticks; ++k) {
    const std::string label = k == 0 ? "0" : fmt("%g", k * f.y_step / f.y_unit) + " " + unit;
    text(o, f.left - 6, f.y(k * f.y_step) + 4, label, "text-anchor=\"end\"");
  }
  // x: every power of two, or every 2nd, 4th... when there are more than 11 of them.
  int stride = 1;
  while (pows.size() > size_t(11 * stride)) stride *= 2;
  double last_labelled = 0;
  for (int64_t p : pows) {
    if (int(std::lround(std::log2(double(p)))) % stride) continue;
    text(o, f.x(double(p)), bottom + 16, human_tokens(p), "text-anchor=\"middle\"");
    last_labelled = double(p);
  }
  // The right edge (a model's maximum that is no power of two, e.g. 160K), unless it would crowd the last label.
  if (!power_of_two(f.x_hi) && (last_labelled == 0 || std::log2(double(f.x_hi) / last_labelled) > 0.6))
    text(o, f.x(double(f.x_hi)), bottom + 16, human_tokens(f.x_hi), "text-anchor=\"middle\"");
  o += "</g>\n";
  text(o, f.left + f.width / 2, kHeight - 14, "context length (tokens, log scale)",
       "text-anchor=\"middle\" font-size=\"12\" fill=\"#333\"");
  text(o, 16, f.top + f.height / 2, "memory per request",
       "text-anchor=\"middle\" font-size=\"12\" fill=\"#333\" transform=\"rotate(-90 16 " + num(f.top + f.height / 2) + ")\"");
}

struct LegendRow {
  std::string colour, text;
  bool swatch;  // a filled square (a stacked kind) rather than a line (a config)
};

void legend(std::string& o, const LedgerFrame& f, const std::vector<LegendRow>& rows) {
  size_t longest = 0;
  for (const auto& r : rows) longest = std::max(longest, r.text.size());
  const double x = f.left + 12, y = f.top + 10, row = 18;
  const double w = std::min(f.width - 24, 40 + 7.0 * double(longest)), h = 8 + row * double(rows.size());
  o += "<g class=\"legend\" font-size=\"12\" fill=\"#222\">\n";
  o += "<rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(w) + "\" height=\"" + num(h) +
       "\" fill=\"#ffffff\" fill-opacity=\"0.9\" stroke=\"#cccccc\"/>\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const double cy = y + 4 + row * (double(i) + 0.5);
    if (rows[i].swatch)
      o += "<rect x=\"" + num(x + 8) + "\" y=\"" + num(cy - 5) + "\" width=\"18\" height=\"10\" fill=\"" + rows[i].colour +
           "\"/>\n";
    else
      o += "<line x1=\"" + num(x + 8) + "\" y1=\"" + num(cy) + "\" x2=\"" + num(x + 26) + "\" y2=\"" + num(cy) +
           "\" stroke=\"" + rows[i].colour + "\" stroke-width=\"2.5\"/>\n";
    text(o, x + 32, cy + 4, rows[i].text);
  }
  o += "</g>\n";
}

// One config's caches stacked by kind: the kinds that do not grow at the bottom (they are the
// floor every context pays), then the growing ones, each band from the sum below it to its own top.
void stacked(std::string& o, const LedgerFrame& f, const LedgerSeries& s, std::vector<LegendRow>& rows) {
  std::vector<const LedgerKindSeries*> order;
  for (const auto& k : s.kinds) order.push_back(&k);
  std::stable_sort(order.begin(), order.end(), [](auto* a, auto* b) {
    return (a->bytes.front() != a->bytes.back()) < (b->bytes.front() != b->bytes.back());
  });
  std::vector<double> below(s.contexts.size(), 0.0);
  std::vector<LegendRow> kind_rows;
  o += "<g class=\"kinds\" stroke=\"none\">\n";
  for (size_t i = 0; i < order.size(); ++i) {
    const char* colour = kPalette[(i + 1) % kColours];
    std::vector<double> top = below;
    for (size_t j = 0; j < top.size(); ++j) top[j] += double(order[i]->bytes[j]);
    std::string pts = polyline_points(f, s.contexts, top);
    for (size_t j = s.contexts.size(); j-- > 0;) pts += " " + num(f.x(double(s.contexts[j]))) + "," + num(f.y(below[j]));
    o += "<polygon class=\"kind\" fill=\"" + std::string(colour) + "\" fill-opacity=\"0.75\" points=\"" + pts + "\"><title>" +
         escape(order[i]->kind) + "</title></polygon>\n";
    kind_rows.push_back({colour, order[i]->kind, true});
    below = top;
  }
  o += "</g>\n";
  rows.insert(rows.end(), kind_rows.rbegin(), kind_rows.rend());  // the legend lists the bands top down
}

}  // namespace

std::vector<int64_t> ledger_sample_contexts(int64_t lo, int64_t hi, int per_octave) {
  if (lo < 1 || hi < lo || per_octave < 1) throw Error("ledger chart: bad context range");
  std::set<int64_t> c = {lo, hi};
  for (int k = 1;; ++k) {
    const int64_t n = std::llround(double(lo) * std::exp2(double(k) / per_octave));
    if (n >= hi) break;
    c.insert(n);
  }
  for (int64_t p = 1; p < hi && p > 0; p *= 2)
    if (p > lo) c.insert(p);
  return {c.begin(), c.end()};
}

double LedgerFrame::x(double context) const {
  return left + width * std::log2(context / double(x_lo)) / std::log2(double(x_hi) / double(x_lo));
}
double LedgerFrame::y(double bytes) const { return top + height * (1 - bytes / y_max); }
double LedgerFrame::bytes_at(double y_pos) const { return (1 - (y_pos - top) / height) * y_max; }
double LedgerFrame::context_at(double x_pos) const {
  return double(x_lo) * std::exp2((x_pos - left) / width * std::log2(double(x_hi) / double(x_lo)));
}

LedgerFrame ledger_frame(const LedgerChart& chart) {
  check(chart);
  LedgerFrame f;
  f.left = kLeft;
  f.top = kTop;
  f.width = kWidth - kLeft - kRight;
  f.height = kHeight - kTop - kBottom;
  f.x_lo = chart.series[0].contexts.front();
  f.x_hi = chart.series[0].contexts.back();
  double most = 0;
  for (const auto& s : chart.series) {
    f.x_lo = std::min(f.x_lo, s.contexts.front());
    f.x_hi = std::max(f.x_hi, s.contexts.back());
    for (int64_t b : s.bytes) most = std::max(most, double(b));
  }
  if (f.x_hi <= f.x_lo) f.x_hi = f.x_lo * 2;  // one context: still an axis to put it on
  if (most <= 0) most = 1;
  // The unit is the largest binary unit the top value reaches; the step a 1, 2 or 5 times a
  // power of ten of that unit, about five ticks; the top edge the first tick at or above the data.
  f.y_unit = 1;
  while (f.y_unit < double(1ull << 40) && most >= f.y_unit * 1024) f.y_unit *= 1024;
  const double raw = most / f.y_unit / 5, mag = std::pow(10.0, std::floor(std::log10(raw))), r = raw / mag;
  f.y_step = (r <= 1 ? 1 : r <= 2 ? 2 : r <= 5 ? 5 : 10) * mag * f.y_unit;
  f.y_max = std::ceil(most / f.y_step - 1e-9) * f.y_step;
  return f;
}

std::string ledger_svg(const LedgerChart& chart) {
  const LedgerFrame f = ledger_frame(chart);
  std::string o = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  o += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + num(kWidth) + "\" height=\"" +
       num(kHeight) + "\" viewBox=\"0 0 " + num(kWidth) + " " + num(kHeight) +
       "\" font-family=\"DejaVu Sans, Arial, Helvetica, sans-serif\">\n";
  o += "<title>" + escape(chart.title) + "</title>\n";
  o += "<rect x=\"0\" y=\"0\" width=\"" + num(kWidth) + "\" height=\"" + num(kHeight) + "\" fill=\"#ffffff\"/>\n";
  text(o, kWidth / 2, 28, chart.title, "text-anchor=\"middle\" font-size=\"15\" fill=\"#111\"");
  axes(o, f);
  std::vector<LegendRow> rows;
  const bool stack = chart.series.size() == 1 && chart.series[0].kinds.size() > 1;
  if (stack) stacked(o, f, chart.series[0], rows);
  o += "<g class=\"lines\" fill=\"none\" stroke-width=\"2.5\" stroke-linejoin=\"round\">\n";
  for (size_t i = 0; i < chart.series.size(); ++i) {
    const auto& s = chart.series[i];
    const std::string colour = stack ? "#222222" : kPalette[i % kColours];
    const std::vector<double> y(s.bytes.begin(), s.bytes.end());
    o += "<polyline class=\"series\" id=\"series-" + std::to_string(i) + "\" stroke=\"" + colour + "\" points=\"" +
         polyline_points(f, s.contexts, y) + "\"><title>" + escape(s.label) + "</title></polyline>\n";
    // Markers at each power of two and at the config's longest context: hovering one shows the
    // ledger's exact bytes there.
    for (size_t j = 0; j < s.contexts.size(); ++j) {
      if (!power_of_two(s.contexts[j]) && j + 1 != s.contexts.size()) continue;
      o += "<circle class=\"point\" cx=\"" + num(f.x(double(s.contexts[j]))) + "\" cy=\"" + num(f.y(double(s.bytes[j]))) +
           "\" r=\"2.5\" fill=\"" + colour + "\"><title>" + escape(s.label) + ": " + std::to_string(s.contexts[j]) +
           " tokens, " + std::to_string(s.bytes[j]) + " bytes (" + human_bytes(double(s.bytes[j])) + ")</title></circle>\n";
    }
    rows.insert(stack ? rows.begin() : rows.end(), LegendRow{colour, s.label + (s.note.empty() ? "" : ": " + s.note), false});
  }
  o += "</g>\n";
  legend(o, f, rows);
  o += "</svg>\n";
  return o;
}

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  auto fail = [&](const char* what, int err) {
    std::remove(tmp.c_str());
    throw Error("cannot write '" + path + "': " + what + ": " + std::strerror(err));
  };
  FILE* fp = std::fopen(tmp.c_str(), "wb");
  if (!fp) fail("cannot create a temporary file beside it", errno);
  const bool wrote = std::fwrite(text.data(), 1, text.size(), fp) == text.size() && std::fflush(fp) == 0;
  const int err = errno;
  if (std::fclose(fp) != 0 || !wrote) fail("write failed", wrote ? errno : err);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) fail("rename failed", errno);
}

std::string human_tokens(int64_t n) {
  if (n >= (1 << 20) && n % (1 << 20) == 0) return std::to_string(n >> 20) + "M";
  if (n >= 1024 && n % 1024 == 0) return std::to_string(n >> 10) + "K";
  return std::to_string(n);
}

std::string human_bytes(double bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (u < 4 && bytes >= 1024) bytes /= 1024, ++u;
  return (u == 0 ? fmt("%.0f", bytes) : fmt("%.2f", bytes)) + " " + units[u];
}

}  // namespace strata::cli
