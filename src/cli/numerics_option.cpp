#include "cli/numerics_option.h"

#include <CLI/CLI.hpp>

#include "cli/numerics_defaults.h"
#include "core/error.h"

namespace strata::cli {
namespace {

// parse_numerics's own message ("unknown numerics profile 'x' (expected exact or fast)") as
// CLI11's validation error, so a bad flag exits like any other bad option value.
CLI::Validator numerics_validator() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        try {
          parse_numerics(s);
          return "";
        } catch (const Error& e) {
          return e.what();
        }
      },
      "exact|fast");
}

std::string help_for(const CLI::App& cmd, const char* what) {
  return std::string(what) + " (default: STRATA_NUMERICS, else " +
         std::string(numerics_name(default_numerics(cmd.get_name()))) + ")";
}

}  // namespace

void add_numerics_option(CLI::App& cmd, std::string& value) {
  cmd.add_option("--numerics", value,
                 help_for(cmd, "numerics profile: exact (fp64 sums, bitwise the reference's) or fast (fp32 accumulation, faster)"))
      ->check(numerics_validator());
}

void add_numerics_option(CLI::App& cmd, std::vector<std::string>& values) {
  cmd.add_option("--numerics", values,
                 help_for(cmd, "numerics profiles to measure one after another on the same model: exact, fast or both"))
      ->delimiter(',')
      ->check(numerics_validator());
}

Numerics resolve_numerics(const std::string& flag, std::string_view command) {
  if (!flag.empty()) return parse_numerics(flag);
  if (auto env = numerics_from_env()) return *env;
  return default_numerics(command);
}

Numerics select_numerics(const std::string& flag, std::string_view command) {
  set_numerics(resolve_numerics(flag, command));
  return active_numerics();
}

std::vector<Numerics> resolve_numerics_list(const std::vector<std::string>& flag, std::string_view command) {
  if (flag.empty()) return {resolve_numerics("", command)};
  std::vector<Numerics> out;
  for (const auto& f : flag) out.push_back(parse_numerics(f));
  return out;
}

}  // namespace strata::cli
