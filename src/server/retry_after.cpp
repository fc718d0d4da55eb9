#include "server/retry_after.h"

#include <algorithm>
#include <cmath>

namespace strata::server {

namespace {
constexpr double kMaxSeconds = 60;
constexpr double kWeight = 0.2;  // of the newest interval: ~10 intervals of memory
}  // namespace

void RetryAfter::finished(clock::time_point now) {
  std::lock_guard lk(mu_);
  if (last_) {
    // An idle gap says nothing about a busy server's pace: capped like the answer.
    const double dt = std::min(kMaxSeconds, std::chrono::duration<double>(now - *last_).count());
    mean_s_ = mean_s_ == 0 ? dt : (1 - kWeight) * mean_s_ + kWeight * dt;
  }
  last_ = now;
}

int RetryAfter::seconds() const {
  std::lock_guard lk(mu_);
  return int(std::clamp(std::ceil(mean_s_), 1.0, kMaxSeconds));
}

}  // namespace strata::server
