#include "core/human_units.h"

#include <cstdio>

namespace strata {

namespace {
std::string scaled(double n, const char* k, const char* m, const char* g, const char* one) {
  char b[32];
  if (n >= 1e9) std::snprintf(b, sizeof b, g, n / 1e9);
  else if (n >= 1e6) std::snprintf(b, sizeof b, m, n / 1e6);
  else if (n >= 1e3) std::snprintf(b, sizeof b, k, n / 1e3);
  else std::snprintf(b, sizeof b, one, n);
  return b;
}
}  // namespace

std::string human_count(double n) { return scaled(n, "%.2fK", "%.2fM", "%.2fB", "%.0f"); }
std::string human_bytes(double n) { return scaled(n, "%.2f KB", "%.2f MB", "%.2f GB", "%.0f B"); }

}  // namespace strata
