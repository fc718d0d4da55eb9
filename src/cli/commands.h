// Subcommand registry: each cmd_*.cpp adds one subcommand to the CLI11 app.
#pragma once
#include <functional>
#include <vector>

namespace CLI { class App; }

namespace strata::cli {

using Register = std::function<void(CLI::App&)>;
std::vector<Register>& registry();
// A subcommand's callback stores its exit code here.
void set_exit_code(int code);
int exit_code();

struct AutoRegister {
  explicit AutoRegister(Register r) { registry().push_back(std::move(r)); }
};

}  // namespace strata::cli
