// The numerics profile (core/numerics.h) each command that runs a model uses when neither
// --numerics nor STRATA_NUMERICS names one: the one place to change a command's default.
#pragma once
#include <array>
#include <stdexcept>
#include <string>
#include <string_view>

#include "core/numerics.h"

namespace strata::cli {

struct CommandNumerics {
  std::string_view command;
  Numerics profile;
};

inline constexpr std::array<CommandNumerics, 5> kDefaultNumerics{{
    {"generate", Numerics::fast},
    {"chat", Numerics::fast},
    {"serve", Numerics::fast},
    {"bench", Numerics::fast},
    // The numerical contract with the reference (tests/goldens): exact whatever the others do.
    {"logits", Numerics::exact},
}};

// The default of a command in kDefaultNumerics; a command missing from it is a programming error.
constexpr Numerics default_numerics(std::string_view command) {
  for (const auto& c : kDefaultNumerics)
    if (c.command == command) return c.profile;
  throw std::logic_error("no default numerics profile for command " + std::string(command));
}

}  // namespace strata::cli
