// `--numerics exact|fast` on the commands that run a model. The profile is the flag's, else
// STRATA_NUMERICS's, else the command's default (cli/numerics_defaults.h), and is set process-wide
// before the model loads: the kernels read it, not the options.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "core/numerics.h"

namespace CLI { class App; }

namespace strata::cli {

// A bad value is a usage error (CLI11's exit code) naming the choices. The command's name is
// cmd's, for the default shown in --help.
void add_numerics_option(CLI::App& cmd, std::string& value);
// bench: several profiles, run one after another on the same model ("exact fast" or "exact,fast").
void add_numerics_option(CLI::App& cmd, std::vector<std::string>& values);

// The flag if given, else STRATA_NUMERICS (an unknown value throws Error), else the default.
Numerics resolve_numerics(const std::string& flag, std::string_view command);
// resolve_numerics, then set_numerics; returns the profile now active.
Numerics select_numerics(const std::string& flag, std::string_view command);
// The profiles bench runs, in the flag's order; without the flag, the one resolve_numerics gives.
std::vector<Numerics> resolve_numerics_list(const std::vector<std::string>& flag, std::string_view command);

}  // namespace strata::cli
