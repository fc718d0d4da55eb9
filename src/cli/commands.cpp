#include "cli/commands.h"

namespace strata::cli {

std::vector<Register>& registry() {
  static std::vector<Register> r;
  return r;
}

namespace {
int g_exit = 0;
}
void set_exit_code(int code) { g_exit = code; }
int exit_code() { return g_exit; }

}  // namespace strata::cli
