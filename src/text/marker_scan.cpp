#include "text/marker_scan.h"

namespace strata {

MarkerHit scan_markers(std::string_view text, size_t from, std::initializer_list<std::string_view> markers,
                       bool at_end) {
  for (size_t i = from; i < text.size(); ++i) {
    const std::string_view tail = text.substr(i);
    int which = 0;
    bool partial = false;
    for (std::string_view m : markers) {
      if (tail.starts_with(m)) return {i, which, false, m.size()};
      if (!at_end && tail.size() < m.size() && m.starts_with(tail)) partial = true;
      ++which;
    }
    if (partial) return {i, -1, true, 0};
  }
  return {text.size(), -1, false, 0};
}

}  // namespace strata
