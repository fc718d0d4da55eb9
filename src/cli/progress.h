// A one-line progress bar on stderr, redrawn at most a few times a second; silent when
// stderr is not a terminal except for a final line.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

namespace strata::cli {

class ProgressBar {
 public:
  explicit ProgressBar(std::string label);
  void update(uint64_t done, uint64_t total);
  void finish();

 private:
  std::string label_;
  bool tty_;
  std::chrono::steady_clock::time_point start_, last_;
  uint64_t total_ = 0;
  bool finished_ = false;
};

}  // namespace strata::cli
