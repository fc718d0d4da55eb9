// `strata version`: build and CPU facts, and the numerics profile the model commands would use.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/commands.h"
#include "cli/numerics_defaults.h"
#include "core/cpu.h"
#include "core/numerics.h"

namespace strata::cli {
namespace {

// STRATA_NUMERICS's profile where it is set (it applies to every command), else each command's default.
std::string numerics_line() {
  if (auto env = numerics_from_env()) return std::string(numerics_name(*env)) + " (STRATA_NUMERICS)";
  std::string line;
  for (const auto& c : kDefaultNumerics)
    line += (line.empty() ? "" : ", ") + std::string(c.command) + " " + std::string(numerics_name(c.profile));
  return line + " (defaults; --numerics or STRATA_NUMERICS chooses)";
}

AutoRegister reg([](CLI::App& app) {
  auto* c = app.add_subcommand("version", "print the version, the kernel instruction set and the numerics profile in use");
  c->callback([] {
    std::printf("strata 0.1.0\nisa: %s (detected %s)\nnumerics: %s\n", std::string(isa_name(active_isa())).c_str(),
                std::string(isa_name(detected_isa())).c_str(), numerics_line().c_str());
  });
});
}  // namespace
}  // namespace strata::cli
