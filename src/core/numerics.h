// The numerics profile: how the engine's weight products accumulate.
//   exact  every product summed exactly (fp64) and rounded once: bitwise the same on every ISA,
//          thread count and batch, and equal to the reference's exact mode;
//   fast   the official rounding points kept (bf16 activations, FP8 activation quantization,
//          FP8/FP4 weights), but the products accumulated in fp32 on the bf16 dot unit
//          (vdpbf16ps) or by fp32 FMA, in an order fixed per output element
//          (kernels/fast_linear.h). Still bitwise the same across batch, threads, chunking and ISA:
//          the scalar and AVX2 paths emulate the instruction's roundings.
// One profile per process, chosen before the model runs: `--numerics exact|fast` on the commands
// that run a model, else STRATA_NUMERICS, else the command's default.
#pragma once
#include <optional>
#include <string_view>

namespace strata {

enum class Numerics { exact = 0, fast = 1 };

Numerics active_numerics();
void set_numerics(Numerics n);
void set_numerics(std::string_view name);  // throws Error naming the choices
std::string_view numerics_name(Numerics n);
Numerics parse_numerics(std::string_view name);
// STRATA_NUMERICS, if set (an unknown value throws Error).
std::optional<Numerics> numerics_from_env();

// Sets a profile for the current scope and restores the previous one (tests, bench A/B).
class ScopedNumerics {
 public:
  explicit ScopedNumerics(Numerics n) : prev_(active_numerics()) { set_numerics(n); }
  ~ScopedNumerics() { set_numerics(prev_); }
  ScopedNumerics(const ScopedNumerics&) = delete;
  ScopedNumerics& operator=(const ScopedNumerics&) = delete;

 private:
  Numerics prev_;
};

}  // namespace strata
