// The vdpbf16ps emulations (kernels/dpbf16.h) against the instruction, bit for bit, NaN payloads
// included: the scalar lane and the AVX2 8-lane version, on the cases that established the
// instruction's semantics (recorded from Zen 5, so they check the emulations on any CPU) and on
// random lanes from each class of input that matters (ordinary, far apart, cancelling, ties,
// near 2^-126 and the denormals, near overflow, Inf/NaN). Without AVX-512 BF16 the random lanes
// compare the emulations with each other.
#include "kernels/dpbf16.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace strata::kernels {
namespace {

struct Lane {
  uint32_t acc;
  uint16_t a0, a1, b0, b1;  // a0, b0: element 2i; a1, b1: element 2i + 1 (added first)
};

std::string show(const Lane& l) {
  char s[96];
  std::snprintf(s, sizeof s, "acc=%08X a0=%04X a1=%04X b0=%04X b1=%04X", l.acc, l.a0, l.a1, l.b0, l.b1);
  return s;
}

bool have_instruction() { return detected_isa() == Isa::avx512; }

std::vector<Isa> isas() {
  std::vector<Isa> v{Isa::scalar};
  for (Isa i : {Isa::avx2, Isa::avx512})
    if (int(i) <= int(detected_isa())) v.push_back(i);
  return v;
}

// One instruction's worth (steps = 1) on every lane, through an ISA's dpbf16_accumulate.
std::vector<uint32_t> run(Isa isa, const std::vector<Lane>& v) {
  const size_t n = v.size();
  std::vector<float> acc(n);
  std::vector<uint16_t> a(2 * n), b(2 * n);
  for (size_t i = 0; i < n; ++i) {
    acc[i] = std::bit_cast<float>(v[i].acc);
    a[2 * i] = v[i].a0, a[2 * i + 1] = v[i].a1, b[2 * i] = v[i].b0, b[2 * i + 1] = v[i].b1;
  }
  dpbf16_accumulate_fn(isa)(acc.data(), a.data(), b.data(), int64_t(n), 1);
  std::vector<uint32_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = std::bit_cast<uint32_t>(acc[i]);
  return out;
}

// Measured on Zen 5 (AVX-512 BF16); each names what it pins down.
struct Golden {
  const char* what;
  Lane in;
  uint32_t want;
};
const Golden kGolden[] = {
    {"order: odd pair first (1 - 1, then + 2^-30; even first gives 0)", {0x3F800000u, 0x3F80, 0x3F80, 0x3080, 0xBF80}, 0x30800000u},
    {"two roundings, not one (1 + 2^-24 ties to 1, then + 2^-30)", {0x3F800000u, 0x3F80, 0x3F80, 0x3080, 0x3380}, 0x3F800000u},
    {"fused: 2^64 * 2^64 - FLT_MAX = 2^104 (a rounded product would be inf)", {0xFF7FFFFFu, 0x0000, 0x5F80, 0x0000, 0x5F80}, 0x73800000u},
    {"fused: -inf + 2^199 stays -inf (a rounded product would give NaN)", {0xFF800000u, 0x0000, 0x7F00, 0x0000, 0x6380}, 0xFF800000u},
    {"fused: 2^-120 + 2^-140 exact (the product alone is below 2^-126)", {0x03800000u, 0x0000, 0x1C80, 0x0000, 0x1C80}, 0x03800008u},
    {"DAZ: bf16 denormal a1 reads as 0 (else 1 + 2^-6)", {0x3F800000u, 0x0000, 0x0001, 0x0000, 0x7F00}, 0x3F800000u},
    {"DAZ: acc denormal reads as 0 (else 0x00800001)", {0x00000001u, 0x0000, 0x0080, 0x0000, 0x3F80}, 0x00800000u},
    {"DAZ keeps the sign: -denormal acc, -0 products -> -0", {0x80000001u, 0x8000, 0x8000, 0x3F80, 0x3F80}, 0x80000000u},
    {"DAZ: -denormal b0 times 1 is -0", {0x80000000u, 0x3F80, 0x8000, 0x807F, 0x3F80}, 0x80000000u},
    {"FTZ after rounding: 2^-126 - 1*2^-152 -> 2^-126", {0x00800000u, 0x0000, 0x0080, 0x0000, 0xB280}, 0x00800000u},
    {"FTZ after rounding: 2^-126 - 2*2^-152 (tie) -> 2^-126", {0x00800000u, 0x0000, 0x0080, 0x0000, 0xB300}, 0x00800000u},
    {"FTZ after rounding: 2^-126 - 3*2^-152 -> flushed", {0x00800000u, 0x0000, 0x0080, 0x0000, 0xB340}, 0x00000000u},
    {"FTZ after rounding: 2^-126 - 4*2^-152 -> flushed (gradual rounding would give 2^-126)", {0x00800000u, 0x0000, 0x0080, 0x0000, 0xB380}, 0x00000000u},
    {"FTZ after rounding, negative: -2^-126 + 2*2^-152 -> -2^-126", {0x80800000u, 0x0000, 0x0080, 0x0000, 0x3300}, 0x80800000u},
    {"FTZ after rounding, negative: -2^-126 + 3*2^-152 -> -0, + (-0) -> -0", {0x80800000u, 0x8000, 0x0080, 0x3F80, 0x3340}, 0x80000000u},
    {"FTZ at the even step: t = 2^-126, + -3*2^-152 -> 0", {0x00800000u, 0x0080, 0x0000, 0xB340, 0x0000}, 0x00000000u},
    {"FTZ of an exact denormal: 0 + 2^-130 -> +0", {0x00000000u, 0x0000, 0x1F00, 0x0000, 0x1F00}, 0x00000000u},
    {"FTZ keeps the sign: -2^-130 -> -0, + (-0) -> -0", {0x00000000u, 0x8000, 0x1F00, 0x3F80, 0x9F00}, 0x80000000u},
    {"FTZ then + (+0): -0 + +0 = +0", {0x00000000u, 0x0000, 0x1F00, 0x3F80, 0x9F00}, 0x00000000u},
    {"cancellation to zero: 1 - 1 = +0, + (-0) = +0", {0x3F800000u, 0x8000, 0x3F80, 0x3F80, 0xBF80}, 0x00000000u},
    {"all -0: -0", {0x80000000u, 0x8000, 0x8000, 0x3F80, 0x3F80}, 0x80000000u},
    {"tie to even down: 1 + 2^-24 -> 1", {0x3F800000u, 0x0000, 0x3F80, 0x0000, 0x3380}, 0x3F800000u},
    {"tie to even up: (1 + 2^-23) + 2^-24 -> 1 + 2^-22", {0x3F800001u, 0x0000, 0x3F80, 0x0000, 0x3380}, 0x3F800002u},
    {"overflow: FLT_MAX + 2^104 -> inf", {0x7F7FFFFFu, 0x0000, 0x5980, 0x0000, 0x5980}, 0x7F800000u},
    {"overflow: FLT_MAX + 2^103 (a tie, FLT_MAX is odd) -> inf", {0x7F7FFFFFu, 0x0000, 0x5980, 0x0000, 0x5900}, 0x7F800000u},
    {"no overflow: FLT_MAX + 2^102 -> FLT_MAX", {0x7F7FFFFFu, 0x0000, 0x5980, 0x0000, 0x5880}, 0x7F7FFFFFu},
    {"-FLT_MAX - 2^103 -> -inf", {0xFF7FFFFFu, 0x0000, 0x5980, 0x0000, 0xD900}, 0xFF800000u},
    {"overflow at the odd step, then -inf: NaN (one rounding would give -inf)", {0x7F7FFFFFu, 0xFF80, 0x7F7F, 0x3F80, 0x3F80}, 0xFFC00000u},
    {"inf * 0 -> default NaN", {0x3F800000u, 0x0000, 0x7F80, 0x0000, 0x0000}, 0xFFC00000u},
    {"inf * bf16 denormal (DAZ) -> default NaN", {0x3F800000u, 0x0000, 0x7F80, 0x0000, 0x0001}, 0xFFC00000u},
    {"+inf acc + (-inf) -> default NaN", {0x7F800000u, 0x0000, 0xFF80, 0x0000, 0x3F80}, 0xFFC00000u},
    {"-inf acc + (-inf) -> -inf", {0xFF800000u, 0x0000, 0xFF80, 0x0000, 0x3F80}, 0xFF800000u},
    {"NaN: a0 first of all five", {0xFFC000AAu, 0x7FC1, 0xFFC2, 0x7FC3, 0xFFC4}, 0x7FC10000u},
    {"NaN: b0 before a1, b1, acc", {0xFFC000AAu, 0x3F80, 0xFFC2, 0x7FC3, 0xFFC4}, 0x7FC30000u},
    {"NaN: a1 before b1, acc", {0xFFC000AAu, 0x3F80, 0xFFC2, 0x3F80, 0xFFC4}, 0xFFC20000u},
    {"NaN: b1 before acc", {0xFFC000AAu, 0x3F80, 0x3F80, 0x3F80, 0xFFC4}, 0xFFC40000u},
    {"NaN: acc, quieted, payload kept", {0xFF8000AAu, 0x3F80, 0x3F80, 0x3F80, 0x3F80}, 0xFFC000AAu},
    {"NaN: signalling bf16 quieted, payload in bits 16-22", {0x3F800000u, 0x3F80, 0x7F81, 0x3F80, 0x3F80}, 0x7FC10000u},
    {"NaN: acc NaN beats inf * 0", {0x7FC000AAu, 0x0000, 0x7F80, 0x0000, 0x0000}, 0x7FC000AAu},
    {"NaN: a0 NaN beats an invalid odd step", {0x3F800000u, 0x7FC1, 0x7F80, 0x3F80, 0x0000}, 0x7FC10000u},
    {"NaN: a1 NaN beats an invalid even step", {0x3F800000u, 0x7F80, 0xFFC2, 0x0000, 0x3F80}, 0xFFC20000u},
};

TEST(Dpbf16Emulation, MeasuredCasesOnEveryIsa) {
  for (const Golden& g : kGolden) {
    const Lane& l = g.in;
    EXPECT_EQ(std::bit_cast<uint32_t>(dpbf16_lane(std::bit_cast<float>(l.acc), l.a0, l.a1, l.b0, l.b1)), g.want)
        << "scalar lane: " << g.what;
    // 40 copies: the AVX2 blocks of 32 and 8 and the AVX-512 blocks of 16 and the masked tail
    const std::vector<Lane> v(40, l);
    for (Isa isa : isas()) {
      const std::vector<uint32_t> out = run(isa, v);
      for (size_t i = 0; i < v.size(); ++i)
        ASSERT_EQ(out[i], g.want) << isa_name(isa) << " lane " << i << ": " << g.what;
    }
  }
}

// Random lanes by class. The generators build bf16 pairs whose product has a chosen binary
// exponent, denormal factors included.
class Gen {
 public:
  explicit Gen(uint64_t seed) : rng_(seed) {}
  int in(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  uint32_t u32() { return uint32_t(rng_()); }
  uint16_t bf(int sign, int biased_exp, int frac) { return uint16_t((sign << 15) | (biased_exp << 7) | (frac & 0x7F)); }
  uint32_t f32(int sign, int biased_exp, uint32_t frac) { return (uint32_t(sign) << 31) | (uint32_t(biased_exp) << 23) | (frac & 0x7FFFFF); }
  // A bf16 of magnitude in [2^e, 2^(e+1)), e >= -133 (denormals below -126).
  uint16_t bf_exp(int e) {
    const int s = in(0, 1);
    if (e >= -126) return bf(s, e + 127, in(0, 127));
    const int top = 7 - (-126 - e);  // the leading bit of a denormal's 7-bit fraction
    return bf(s, 0, (1 << top) | (in(0, 127) & ((1 << top) - 1)));
  }
  // A pair (a, b) whose product is about 2^x.
  void pair(int x, uint16_t* a, uint16_t* b) {
    const int ea = in(std::max(-133, x - 127), std::min(127, x + 133));
    *a = bf_exp(ea);
    *b = bf_exp(std::clamp(x - ea, -133, 127));
  }
  // An fp32 of magnitude about 2^e (denormal below -126, zero below -149).
  uint32_t acc_exp(int e) {
    const int s = in(0, 1);
    e = std::min(e, 127);
    if (e >= -126) return f32(s, e + 127, u32());
    if (e < -149) return uint32_t(s) << 31;
    const int top = 23 - (-126 - e);
    return f32(s, 0, (1u << top) | (u32() & ((1u << top) - 1)));
  }
  // Any bf16 / fp32 class: NaN, inf, zero, denormal, the largest finite, a normal.
  uint16_t any16() {
    const int s = in(0, 1) << 15;
    switch (in(0, 7)) {
      case 0: return uint16_t(s | 0x7F80 | in(1, 127));
      case 1: return uint16_t(s | 0x7F80);
      case 2: return uint16_t(s);
      case 3: return uint16_t(s | in(1, 127));
      case 4: return uint16_t(s | 0x7F7F);
      default: return uint16_t(s | (in(1, 254) << 7) | in(0, 127));
    }
  }
  uint32_t any32() {
    const uint32_t s = uint32_t(in(0, 1)) << 31;
    switch (in(0, 7)) {
      case 0: return s | 0x7F800000u | uint32_t(in(1, 0x7FFFFF));
      case 1: return s | 0x7F800000u;
      case 2: return s;
      case 3: return s | uint32_t(in(1, 0x7FFFFF));
      case 4: return s | 0x7F7FFFFFu;
      default: return s | (uint32_t(in(1, 254)) << 23) | (u32() & 0x7FFFFF);
    }
  }

 private:
  std::mt19937_64 rng_;
};

struct Class {
  const char* name;
  std::function<Lane(Gen&)> make;
};

const std::vector<Class>& classes() {
  static const std::vector<Class> c = {
      {"raw bits", [](Gen& g) { return Lane{g.u32(), uint16_t(g.u32()), uint16_t(g.u32()), uint16_t(g.u32()), uint16_t(g.u32())}; }},
      {"comparable magnitudes", [](Gen& g) {
         Lane l;
         const int x = g.in(-150, 128);
         g.pair(x + g.in(-3, 3), &l.a0, &l.b0);
         g.pair(x + g.in(-3, 3), &l.a1, &l.b1);
         l.acc = g.acc_exp(x + g.in(-30, 30));
         return l;
       }},
      {"far apart", [](Gen& g) {
         Lane l;
         const int x = g.in(-140, 120);
         g.pair(x + g.in(-40, 40), &l.a0, &l.b0);
         g.pair(x + g.in(-40, 40), &l.a1, &l.b1);
         l.acc = g.acc_exp(x + g.in(-40, 40));
         return l;
       }},
      {"products cancelling", [](Gen& g) {
         Lane l;
         const int x = g.in(-150, 128);
         g.pair(x, &l.a0, &l.b0);
         l.a1 = l.a0 ^ 0x8000, l.b1 = l.b0;
         if (g.in(0, 2) == 1) l.a1 ^= uint16_t(g.in(1, 3));
         l.acc = g.in(0, 4) == 0 ? 0 : g.acc_exp(x + g.in(-40, 5));
         return l;
       }},
      {"acc cancelling a product", [](Gen& g) {
         Lane l;
         const int x = g.in(-150, 128);
         g.pair(x, &l.a1, &l.b1);
         g.pair(x - g.in(0, 30), &l.a0, &l.b0);
         const float p = std::bit_cast<float>(uint32_t(l.a1) << 16) * std::bit_cast<float>(uint32_t(l.b1) << 16);
         l.acc = std::bit_cast<uint32_t>(-p) + uint32_t(g.in(-3, 3));
         return l;
       }},
      {"ties", [](Gen& g) {
         Lane l;
         const int x = g.in(-120, 127);
         l.acc = g.acc_exp(x);
         g.pair(x - 24 + g.in(-2, 1), &l.a1, &l.b1);
         g.pair(x - 24 + g.in(-10, 1), &l.a0, &l.b0);
         if (g.in(0, 1)) l.a1 &= 0xFF80, l.b1 &= 0xFF80;  // powers of two: exact half-ulps
         if (g.in(0, 1)) l.a0 &= 0xFF80, l.b0 = uint16_t((l.b0 & 0xFF80) | (g.in(0, 1) ? 0 : 64));
         return l;
       }},
      {"at 2^-126", [](Gen& g) {
         // acc = ±(2^-126 + k 2^-149) minus j 2^-152 at one step: j = 1..2 round up to 2^-126,
         // 3.. flush (4 is where gradual underflow would differ, any j where flushing before
         // rounding would)
         Lane l{};
         const int k = g.in(0, 4), m = 8 * k + g.in(0, 18), s = g.in(0, 1);
         const uint32_t acc = g.f32(s, 1, uint32_t(k));
         const uint16_t tiny = 0x0080, step = uint16_t((std::bit_cast<uint32_t>(float(m) * 0x1p-26f) >> 16) | ((s ^ 1) << 15));
         l.acc = acc;
         if (g.in(0, 1)) l.a1 = tiny, l.b1 = step, l.a0 = 0, l.b0 = g.in(0, 1) ? 0x3F80 : 0xBF80;
         else l.a0 = tiny, l.b0 = step;
         return l;
       }},
      {"near 2^-126, mixed", [](Gen& g) {
         Lane l;
         const int x = g.in(-140, -110), s = g.in(0, 1);
         l.acc = g.f32(s, g.in(1, 3), g.u32() % 64);
         g.pair(x, &l.a1, &l.b1);
         g.pair(x + g.in(-8, 0), &l.a0, &l.b0);
         if (g.in(0, 1)) l.a1 = uint16_t((l.a1 & 0x7FFF) | ((s ^ 1) << 15));
         return l;
       }},
      {"denormal range", [](Gen& g) {
         Lane l;
         const int x = g.in(-160, -115);
         g.pair(x + g.in(-6, 6), &l.a0, &l.b0);
         g.pair(x + g.in(-6, 6), &l.a1, &l.b1);
         l.acc = g.in(0, 3) == 0 ? (g.u32() & 0x807FFFFFu) : g.acc_exp(x + g.in(-10, 10));
         return l;
       }},
      {"denormal operands", [](Gen& g) {
         auto op = [&] { return g.in(0, 1) ? uint16_t(g.u32() & 0x807F) : g.bf(g.in(0, 1), g.in(100, 254), g.in(0, 127)); };
         Lane l{0, op(), op(), op(), op()};
         l.acc = g.in(0, 1) ? g.acc_exp(g.in(-150, 0)) : (g.u32() & 0x807FFFFFu);
         return l;
       }},
      {"near overflow", [](Gen& g) {
         Lane l;
         const int x = g.in(120, 135);
         g.pair(x + g.in(-3, 3), &l.a0, &l.b0);
         g.pair(x + g.in(-3, 3), &l.a1, &l.b1);
         l.acc = g.in(0, 1) ? g.acc_exp(127) : g.f32(g.in(0, 1), 254, 0x7FFFFF - uint32_t(g.in(0, 1000)));
         return l;
       }},
      {"products beyond fp32", [](Gen& g) {
         Lane l;
         g.pair(g.in(128, 254), &l.a0, &l.b0);
         g.pair(g.in(-20, 254), &l.a1, &l.b1);
         l.acc = g.in(0, 2) == 0 ? g.f32(g.in(0, 1), 255, 0) : g.acc_exp(g.in(0, 127));
         return l;
       }},
      {"inf, NaN, zero, denormal mix", [](Gen& g) { return Lane{g.any32(), g.any16(), g.any16(), g.any16(), g.any16()}; }},
      {"inf, zero, denormal mix, no bf16 NaN (AVX2's vector path)", [](Gen& g) {
         auto op = [&] {
           uint16_t h;
           do h = g.any16();
           while ((h & 0x7FFF) > 0x7F80);
           return h;
         };
         return Lane{g.any32(), op(), op(), op(), op()};
       }},
  };
  return c;
}

TEST(Dpbf16Emulation, RandomLanesMatchTheInstruction) {
  const std::vector<Isa> all = isas();
  const Isa truth = have_instruction() ? Isa::avx512 : Isa::scalar;
  if (all.size() < 2) GTEST_SKIP() << "neither AVX-512 BF16 nor AVX2: only the measured cases apply";
  constexpr size_t kLanes = 1 << 16;  // per class; a multiple of 32: every AVX2 lane in a vector
  uint64_t seed = 1;
  for (const Class& c : classes()) {
    Gen g(seed++);
    std::vector<Lane> v(kLanes);
    for (Lane& l : v) l = c.make(g);
    const std::vector<uint32_t> want = run(truth, v);
    for (Isa isa : all) {
      if (isa == truth) continue;
      const std::vector<uint32_t> got = run(isa, v);
      size_t bad = 0;
      for (size_t i = 0; i < kLanes; ++i)
        if (got[i] != want[i] && ++bad <= 3)
          ADD_FAILURE() << c.name << ", " << isa_name(isa) << " vs " << isa_name(truth) << ": " << show(v[i]) << " -> "
                        << std::hex << got[i] << ", want " << want[i];
      if (bad) ADD_FAILURE() << c.name << ", " << isa_name(isa) << ": " << bad << " of " << kLanes << " lanes differ";
    }
    // The scalar lane function itself (the array form's tail and AVX2's fallback call it).
    size_t bad = 0;
    for (size_t i = 0; i < kLanes; i += 7) {
      const Lane& l = v[i];
      bad += std::bit_cast<uint32_t>(dpbf16_lane(std::bit_cast<float>(l.acc), l.a0, l.a1, l.b0, l.b1)) != want[i];
    }
    if (bad) ADD_FAILURE() << c.name << ", dpbf16_lane: " << bad << " of " << (kLanes + 6) / 7 << " lanes differ";
  }
}

// Accumulation over many steps, as a dot would run it, with every lane count's blocks and tails:
// outputs feed the next step, so a single differing bit would propagate.
TEST(Dpbf16Emulation, AccumulateChainsAgreeOnEveryIsa) {
  const std::vector<Isa> all = isas();
  const Isa truth = have_instruction() ? Isa::avx512 : Isa::scalar;
  Gen g(99);
  std::normal_distribution<float> nd;
  std::mt19937 rng(7);
  for (int64_t lanes : {1, 5, 8, 13, 16, 17, 31, 32, 40, 64, 77, 128}) {
    for (int64_t steps : {1, 2, 37}) {
      std::vector<uint16_t> a(size_t(2 * lanes * steps)), b(a.size());
      for (size_t k = 0; k < a.size(); ++k) {
        // bf16 of values spread over 2^±12, truncated: a dot's operands
        a[k] = uint16_t(std::bit_cast<uint32_t>(std::ldexp(nd(rng), g.in(-12, 12))) >> 16);
        b[k] = uint16_t(std::bit_cast<uint32_t>(std::ldexp(nd(rng), g.in(-12, 12))) >> 16);
      }
      std::vector<float> acc0(static_cast<size_t>(lanes));
      for (float& x : acc0) x = std::ldexp(nd(rng), g.in(-4, 4));
      std::vector<float> want = acc0;
      dpbf16_accumulate_fn(truth)(want.data(), a.data(), b.data(), lanes, steps);
      for (Isa isa : all) {
        std::vector<float> got = acc0;
        dpbf16_accumulate_fn(isa)(got.data(), a.data(), b.data(), lanes, steps);
        for (int64_t i = 0; i < lanes; ++i)
          ASSERT_EQ(std::bit_cast<uint32_t>(got[size_t(i)]), std::bit_cast<uint32_t>(want[size_t(i)]))
              << isa_name(isa) << " vs " << isa_name(truth) << ", lanes " << lanes << " steps " << steps << " lane " << i;
      }
    }
  }
}

}  // namespace
}  // namespace strata::kernels
