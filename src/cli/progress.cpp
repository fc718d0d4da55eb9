#include "cli/progress.h"

#include <unistd.h>

#include <cstdio>

namespace strata::cli {

ProgressBar::ProgressBar(std::string label)
    : label_(std::move(label)), tty_(::isatty(2)), start_(std::chrono::steady_clock::now()), last_(start_) {}

void ProgressBar::update(uint64_t done, uint64_t total) {
  total_ = total;
  if (!tty_) return;
  auto now = std::chrono::steady_clock::now();
  if (done < total && now - last_ < std::chrono::milliseconds(200)) return;
  last_ = now;
  const double f = total ? double(done) / double(total) : 1.0;
  const int width = 30, fill = int(f * width);
  std::fprintf(stderr, "\r%s [%.*s%*s] %5.1f%% %.2f/%.2f GB", label_.c_str(), fill,
               "##############################", width - fill, "", 100 * f, double(done) / 1e9, double(total) / 1e9);
  std::fflush(stderr);
}

void ProgressBar::finish() {
  if (finished_) return;
  finished_ = true;
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::fprintf(stderr, "%s%s: %.2f GB in %.1f s\n", tty_ ? "\r\033[K" : "", label_.c_str(), double(total_) / 1e9, s);
}

}  // namespace strata::cli
