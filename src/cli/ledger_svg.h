// `strata ledger --svg FILE`: memory per request against context length (log scale), one line
// per config, or one config's caches stacked by kind, as a self-contained SVG 1.1 file (no
// scripts, no external fonts). The drawing is a pure function of the series, which the ledger
// computes with the same functions its text output uses, so a test can hold the picture to the
// numbers.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace strata::cli {

struct LedgerKindSeries {
  std::string kind;            // cache::kind_name
  std::vector<int64_t> bytes;  // at the series' contexts
};

struct LedgerSeries {
  std::string label;                    // the legend's name for the config
  std::string note;                     // the legend's figures, e.g. "3.76 KiB/token + 14.71 MiB fixed"
  std::vector<int64_t> contexts;        // ascending, each > 0
  std::vector<int64_t> bytes;           // memory per request at each context
  std::vector<LedgerKindSeries> kinds;  // optional; drawn stacked when the chart has one series
};

struct LedgerChart {
  std::string title;
  std::vector<LedgerSeries> series;
};

// Contexts to sample on the log axis: `per_octave` points per doubling from lo to hi (rounded
// to whole tokens), every power of two between them, and lo and hi themselves; ascending.
std::vector<int64_t> ledger_sample_contexts(int64_t lo, int64_t hi, int per_octave = 16);

// Where the chart puts a context and a byte count, in SVG user units (y grows downwards).
struct LedgerFrame {
  double left = 0, top = 0, width = 0, height = 0;  // the plot area
  int64_t x_lo = 1, x_hi = 2;                       // contexts at the left and right edges
  double y_max = 0;                                 // bytes at the top edge (the bottom is 0)
  double y_step = 0;                                // bytes between two y ticks
  double y_unit = 1;                                // 1, KiB, MiB, GiB or TiB: the ticks' unit
  double x(double context) const;
  double y(double bytes) const;
  double bytes_at(double y_pos) const;  // y's inverse
  double context_at(double x_pos) const;  // x's inverse
};
LedgerFrame ledger_frame(const LedgerChart& chart);

// The whole SVG document. Throws Error when there is nothing to draw.
std::string ledger_svg(const LedgerChart& chart);

// Writes `text` to `path` through a temporary file in the same folder and a rename, so a
// reader never sees half a file; throws Error naming the path when it cannot.
void write_file_atomically(const std::string& path, const std::string& text);

// Labels: 1K, 128K, 160K, 1M, 1000; 512 B, 14.71 MiB, 3.77 GiB.
std::string human_tokens(int64_t n);
std::string human_bytes(double bytes);

}  // namespace strata::cli
