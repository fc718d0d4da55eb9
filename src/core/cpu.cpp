#include "core/cpu.h"

#include <atomic>
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <cstdlib>
#include <string>

#include "core/error.h"

namespace strata {
namespace {

#if defined(__x86_64__)
// CPUID leaf 1, ECX bit 29 (clang's __builtin_cpu_supports does not know "f16c").
bool has_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29));
}
#endif

Isa detect() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512vnni"))
    return Isa::avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c())
    return Isa::avx2;
#endif
  return Isa::scalar;
}

Isa parse(std::string_view s) {
  if (s == "scalar") return Isa::scalar;
  if (s == "avx2") return Isa::avx2;
  if (s == "avx512") return Isa::avx512;
  throw Error("unknown ISA '" + std::string(s) + "' (expected scalar, avx2 or avx512)");
}

Isa initial() {
  Isa best = detect();
  if (const char* env = std::getenv("STRATA_ISA"); env && *env) {
    Isa want = parse(env);
    if (int(want) > int(best))
      throw Error("STRATA_ISA=" + std::string(env) + " but this CPU supports at most " +
                  std::string(isa_name(best)));
    return want;
  }
  return best;
}

std::atomic<int>& active() {
  static std::atomic<int> a{int(initial())};
  return a;
}

}  // namespace

Isa detected_isa() {
  static const Isa d = detect();
  return d;
}

Isa active_isa() { return Isa(active().load(std::memory_order_relaxed)); }

void set_isa(Isa isa) {
  if (int(isa) > int(detected_isa()))
    throw Error("ISA " + std::string(isa_name(isa)) + " requested but this CPU supports at most " +
                std::string(isa_name(detected_isa())));
  active().store(int(isa));
}

void set_isa(std::string_view name) { set_isa(parse(name)); }

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::scalar: return "scalar";
    case Isa::avx2: return "avx2";
    case Isa::avx512: return "avx512";
  }
  return "?";
}

}  // namespace strata
