// Run-time choice of the instruction set for kernels. The binary is built for baseline
// x86-64; AVX2 and AVX-512 kernels live in their own translation units and are called only
// when the CPU has them. STRATA_ISA=scalar|avx2|avx512 (or `strata --isa`) forces a lower
// level, so the scalar path is tested on any machine.
#pragma once
#include <string_view>

namespace strata {

enum class Isa { scalar = 0, avx2 = 1, avx512 = 2 };

Isa detected_isa();          // best level this CPU supports
Isa active_isa();            // level kernels use now
// Forces a level; throws Error if the CPU lacks it. Call before the first kernel runs.
void set_isa(Isa isa);
void set_isa(std::string_view name);
std::string_view isa_name(Isa isa);

}  // namespace strata
