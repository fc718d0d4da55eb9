// Latencies (time to first token, between tokens) folded into fixed buckets as they are
// observed: the engine's memory for them stays bounded however long it runs, whether or not
// anyone reads its metrics (raw samples would grow by one per generated token).
#pragma once
#include <cstdint>
#include <vector>

namespace strata::engine {

struct LatencyHistogram {
  // Upper bounds in seconds, increasing: 1 ms .. 60 s, about x2.5 apart; +Inf is implied.
  static const std::vector<double>& bounds();
  std::vector<uint64_t> counts = std::vector<uint64_t>(bounds().size() + 1, 0);  // per bucket; last = +Inf
  double sum = 0;
  uint64_t count = 0;
  void observe(double seconds);
};

}  // namespace strata::engine
