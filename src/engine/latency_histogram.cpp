#include "engine/latency_histogram.h"

#include <cstddef>

namespace strata::engine {

const std::vector<double>& LatencyHistogram::bounds() {
  static const std::vector<double> b = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
  return b;
}

void LatencyHistogram::observe(double seconds) {
  const auto& b = bounds();
  std::size_t i = 0;
  while (i < b.size() && seconds > b[i]) ++i;
  ++counts[i];
  sum += seconds;
  ++count;
}

}  // namespace strata::engine
