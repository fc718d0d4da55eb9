// Counts and sizes for people: "284.33B" parameters, "1.50 GB", as `strata inspect` prints them.
#pragma once
#include <string>

namespace strata {

std::string human_count(double n);  // 1.23K, 4.56M, 7.89B
std::string human_bytes(double n);  // decimal units: 1.23 KB, 4.56 MB, 7.89 GB

}  // namespace strata
