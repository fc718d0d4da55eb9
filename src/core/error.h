// Errors: one exception type whose message is a single line naming what failed and where.
#pragma once
#include <stdexcept>
#include <string>

namespace strata {

// Thrown for every user-visible failure (bad file, bad config, bad request). The CLI prints
// what() on one line and exits non-zero; the server turns it into an error response.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

}  // namespace strata
