// What every fuzz target shares: the input split into choices and a payload, and a check that
// aborts (a finding, with the input saved) when a property the code promises does not hold.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace strata::fuzz {

class Input {
 public:
  Input(const uint8_t* data, size_t size) : p_(data), n_(size) {}
  // One byte of choices (0 once the input is used up).
  uint8_t byte() {
    if (!n_) return 0;
    --n_;
    return *p_++;
  }
  // Up to `max` bytes.
  std::string_view take(size_t max) {
    const size_t k = max < n_ ? max : n_;
    std::string_view s(reinterpret_cast<const char*>(p_), k);
    p_ += k;
    n_ -= k;
    return s;
  }
  std::string_view rest() { return take(n_); }
  size_t left() const { return n_; }

 private:
  const uint8_t* p_;
  size_t n_;
};

[[noreturn]] inline void fail(const char* file, int line, const char* what, const std::string& detail) {
  std::fprintf(stderr, "%s:%d: property violated: %s\n%s\n", file, line, what, detail.c_str());
  std::abort();
}

}  // namespace strata::fuzz

#define FUZZ_CHECK(cond, detail)                                       \
  do {                                                                 \
    if (!(cond)) ::strata::fuzz::fail(__FILE__, __LINE__, #cond, (detail)); \
  } while (0)
