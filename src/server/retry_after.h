// The Retry-After of a 429 (queue full): the queue has room again when a request leaves it, so
// the estimate is the recent interval between completion requests finishing (a moving average
// of them), in whole seconds within [1, 60]. Before two requests have finished it is 1.
#pragma once
#include <chrono>
#include <mutex>
#include <optional>

namespace strata::server {

class RetryAfter {
 public:
  using clock = std::chrono::steady_clock;

  void finished(clock::time_point now = clock::now());
  int seconds() const;

 private:
  mutable std::mutex mu_;
  std::optional<clock::time_point> last_;
  double mean_s_ = 0;  // 0: no interval yet
};

}  // namespace strata::server
