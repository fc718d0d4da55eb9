#include "cli/app.h"

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "core/cpu.h"

namespace strata::cli {

int run(int argc, char** argv) {
  CLI::App app{"strata: an inference engine for DeepSeek-V4 and the new generation of open LLMs"};
  app.require_subcommand(1);
  std::string isa;
  app.add_option("--isa", isa, "force a kernel instruction set: scalar, avx2 or avx512 (also STRATA_ISA)");
  app.parse_complete_callback([&] {
    if (!isa.empty()) set_isa(isa);
  });
  for (const auto& reg : registry()) reg(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return exit_code();
}

}  // namespace strata::cli
