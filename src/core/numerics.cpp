#include "core/numerics.h"

#include <atomic>
#include <cstdlib>
#include <string>

#include "core/error.h"

namespace strata {
namespace {
std::atomic<int>& active() {
  static std::atomic<int> a{int(Numerics::exact)};
  return a;
}
}  // namespace

Numerics parse_numerics(std::string_view s) {
  if (s == "exact") return Numerics::exact;
  if (s == "fast") return Numerics::fast;
  throw Error("unknown numerics profile '" + std::string(s) + "' (expected exact or fast)");
}

std::optional<Numerics> numerics_from_env() {
  const char* env = std::getenv("STRATA_NUMERICS");
  if (!env || !*env) return std::nullopt;
  try {
    return parse_numerics(env);
  } catch (const Error& e) {
    throw Error("STRATA_NUMERICS: " + std::string(e.what()));
  }
}

Numerics active_numerics() { return Numerics(active().load(std::memory_order_relaxed)); }
void set_numerics(Numerics n) { active().store(int(n)); }
void set_numerics(std::string_view name) { set_numerics(parse_numerics(name)); }

std::string_view numerics_name(Numerics n) { return n == Numerics::fast ? "fast" : "exact"; }

}  // namespace strata
