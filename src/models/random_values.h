// Reproducible random tensor values for `strata make-model`: every value is a pure function of
// (seed, tensor name, element index), so any thread split writes the same bytes and the same
// seed always gives the same checkpoint.
#pragma once
#include <cstdint>
#include <string>

namespace strata::models {

inline uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A tensor's key from the seed and its name.
inline uint64_t name_key(uint64_t seed, const std::string& name) {
  uint64_t h = splitmix(seed);
  for (unsigned char ch : name) h = splitmix(h ^ ch);
  return h;
}

// Uniform in (-1, 1) from (tensor key, index).
inline float unit_value(uint64_t key, uint64_t i) {
  return float(double(splitmix(key ^ splitmix(i)) >> 11) * 0x1.0p-52 - 1.0);
}

}  // namespace strata::models
