// `strata version`: build and CPU facts.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/commands.h"
#include "core/cpu.h"

namespace strata::cli {
namespace {
AutoRegister reg([](CLI::App& app) {
  auto* c = app.add_subcommand("version", "print the version and the kernel instruction set in use");
  c->callback([] {
    std::printf("strata 0.1.0\nisa: %s (detected %s)\n", std::string(isa_name(active_isa())).c_str(),
                std::string(isa_name(detected_isa())).c_str());
  });
});
}  // namespace
}  // namespace strata::cli
