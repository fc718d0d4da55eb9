// Which vector instructions compete with the fp64 FMAs for issue, on this machine.
//
// Every product of strata's canonical dot is one fp64 FMA lane, so a GEMV's weight decoding is
// free only where its instructions issue beside the FMAs. Each case runs the one-row GEMV's
// inner loop shape from L1 — 2 activation vectors loaded, then for 4 weight rows 2 decoded
// vectors and 2 FMAs, i.e. 8 FMAs on 8 independent chains per 16 columns — with the "decoder"
// replaced by one instruction applied to an 8-byte broadcast. Compare ns/iteration with
// BM_FmaOnly (no decoding, the weights' loads left out too) and BM_Broadcast (the loads alone):
// an instruction that adds ~0 to BM_Broadcast issues on other pipes than the FMAs; one that adds
// as much as the FMAs themselves shares their pipes. The last cases are the FP8 GEMV's
// complete decoders (kernels/avx512/linear_avx512.cpp). docs/cpu-performance.md has the figures.
// Run: build/<dir>/bench/vector_ports_bench (one thread; needs AVX-512 with VBMI and GFNI).
#include <benchmark/benchmark.h>
#include <immintrin.h>

// GCC 12's AVX-512 headers build some intrinsics' results from an undefined vector and warn
// about it once they are inlined into a target("avx512...") function (as index_dot_avx512.cpp).
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <cstdint>
#include <cstring>

namespace {

#define STRATA_PORTS_TARGET __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512vbmi,avx512vnni,gfni")))

constexpr int kCols = 4096;  // 4 weight rows of 4 KB and 32 KB of activation: L1-resident
alignas(64) uint8_t g_w[4][kCols + 64];
alignas(64) double g_x[kCols];

enum class Op {
  fma_only, broadcast, shift_imm, shift_var, sign_extend, permute_bytes, shuffle_bytes, and_bits, unpack,
  add, gf2p8affine, ternary, multishift, scalef, rotate, dpbusd, permute2_bytes, cvt_ps_pd, cvt_qq_pd,
  fp8_multishift_and, fp8_shifts_and
};

STRATA_PORTS_TARGET inline __m512i broadcast8(const uint8_t* p) {
  int64_t b;
  std::memcpy(&b, p, 8);
  return _mm512_set1_epi64(b);
}

// The FP8 GEMV's e4m3 -> fp64 bits decoders (value × 2^-1016): vpmultishiftqb + mask, and the
// same by shifts (lane i shifted left 56 - 8i, arithmetic right 7, mask).
STRATA_PORTS_TARGET inline __m512i fp8_multishift(const uint8_t* p) {
  const __m512i ctrl = _mm512_set_epi64(0x3837000000000000, 0x302F000000000000, 0x2827000000000000, 0x201F000000000000,
                                        0x1817000000000000, 0x100F000000000000, 0x0807000000000000, 0x003F000000000000);
  const __m512i v = _mm512_maskz_multishift_epi64_epi8(__mmask64(0xC0C0C0C0C0C0C0C0ull), ctrl, broadcast8(p));
  return _mm512_and_si512(v, _mm512_set1_epi64(int64_t(0x80FE000000000000ull)));
}
STRATA_PORTS_TARGET inline __m512i fp8_shifts(const uint8_t* p) {
  const __m512i to_top = _mm512_set_epi64(0, 8, 16, 24, 32, 40, 48, 56);
  const __m512i v = _mm512_srai_epi64(_mm512_sllv_epi64(broadcast8(p), to_top), 7);
  return _mm512_and_si512(v, _mm512_set1_epi64(int64_t(0x80FE000000000000ull)));
}

template <Op op>
STRATA_PORTS_TARGET inline __m512d decode(const uint8_t* p, __m512d other) {
  const __m512i c = _mm512_set1_epi64(0x3837000000000000);
  __m512i v{};
  if constexpr (op == Op::fma_only) return other;
  else if constexpr (op == Op::broadcast) v = broadcast8(p);
  else if constexpr (op == Op::shift_imm) v = _mm512_slli_epi64(broadcast8(p), 3);
  else if constexpr (op == Op::shift_var) v = _mm512_sllv_epi64(broadcast8(p), _mm512_set_epi64(0, 8, 16, 24, 32, 40, 48, 56));
  else if constexpr (op == Op::sign_extend) v = _mm512_cvtepi8_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  else if constexpr (op == Op::permute_bytes) v = _mm512_permutexvar_epi8(broadcast8(p), c);
  else if constexpr (op == Op::shuffle_bytes) v = _mm512_shuffle_epi8(c, broadcast8(p));
  else if constexpr (op == Op::and_bits) v = _mm512_and_si512(broadcast8(p), c);
  else if constexpr (op == Op::unpack) v = _mm512_unpacklo_epi8(broadcast8(p), c);
  else if constexpr (op == Op::add) v = _mm512_add_epi64(broadcast8(p), c);
  else if constexpr (op == Op::gf2p8affine) v = _mm512_gf2p8affine_epi64_epi8(broadcast8(p), c, 0);
  else if constexpr (op == Op::ternary) v = _mm512_ternarylogic_epi64(broadcast8(p), c, c, 0x96);
  else if constexpr (op == Op::multishift) v = _mm512_maskz_multishift_epi64_epi8(__mmask64(0xC0C0C0C0C0C0C0C0ull), c, broadcast8(p));
  else if constexpr (op == Op::scalef) v = _mm512_castpd_si512(_mm512_scalef_pd(_mm512_castsi512_pd(broadcast8(p)), _mm512_castsi512_pd(c)));
  else if constexpr (op == Op::rotate) v = _mm512_rol_epi64(broadcast8(p), 3);
  else if constexpr (op == Op::dpbusd) v = _mm512_dpbusd_epi32(c, broadcast8(p), c);
  else if constexpr (op == Op::permute2_bytes) v = _mm512_permutex2var_epi8(broadcast8(p), c, c);
  else if constexpr (op == Op::cvt_ps_pd) v = _mm512_castpd_si512(_mm512_cvtps_pd(_mm512_castps512_ps256(_mm512_castsi512_ps(broadcast8(p)))));
  else if constexpr (op == Op::cvt_qq_pd) v = _mm512_castpd_si512(_mm512_cvtepi64_pd(broadcast8(p)));
  else if constexpr (op == Op::fp8_multishift_and) v = fp8_multishift(p);
  else if constexpr (op == Op::fp8_shifts_and) v = fp8_shifts(p);
  return _mm512_castsi512_pd(v);
}

template <Op op>
STRATA_PORTS_TARGET __attribute__((noinline)) double pass(int reps) {
  __m512d acc[8];
  for (auto& a : acc) a = _mm512_setzero_pd();
  for (int r = 0; r < reps; ++r)
    for (int k = 0; k < kCols; k += 16) {
      __m512d xl = _mm512_load_pd(g_x + k), xh = _mm512_load_pd(g_x + k + 8);
      asm("" : "+v"(xl), "+v"(xh));  // one load each, not one per FMA
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) {
        acc[2 * i] = _mm512_fmadd_pd(xl, decode<op>(g_w[i] + k, xh), acc[2 * i]);
        acc[2 * i + 1] = _mm512_fmadd_pd(xh, decode<op>(g_w[i] + k + 8, xl), acc[2 * i + 1]);
      }
    }
  double s = 0;
  for (const auto& a : acc) s += _mm512_reduce_add_pd(a);
  return s;
}

template <Op op>
void BM_Op(benchmark::State& st) {
  if (!__builtin_cpu_supports("avx512vbmi") || !__builtin_cpu_supports("gfni") || !__builtin_cpu_supports("avx512vnni")) {
    st.SkipWithError("needs AVX-512 with VBMI, VNNI and GFNI");
    return;
  }
  for (int k = 0; k < kCols; ++k) {
    g_x[k] = 1e-300 * k;  // tiny: no overflow whatever the decoded bits
    for (int i = 0; i < 4; ++i) g_w[i][k] = uint8_t(k * 7 + i);
  }
  constexpr int kReps = 64;
  for (auto _ : st) benchmark::DoNotOptimize(pass<op>(kReps));
  // one iteration of the inner loop: 16 columns × 4 rows, 8 FMAs and 8 decoded vectors
  st.counters["ns/iter"] = benchmark::Counter(double(kReps) * (kCols / 16),
                                              benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  st.counters["GMAC/s"] = benchmark::Counter(double(kReps) * kCols * 4 / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

BENCHMARK(BM_Op<Op::fma_only>)->Name("BM_FmaOnly");
BENCHMARK(BM_Op<Op::broadcast>)->Name("BM_Broadcast");
BENCHMARK(BM_Op<Op::shift_imm>)->Name("BM_Vpsllq");
BENCHMARK(BM_Op<Op::shift_var>)->Name("BM_Vpsllvq");
BENCHMARK(BM_Op<Op::sign_extend>)->Name("BM_Vpmovsxbq");
BENCHMARK(BM_Op<Op::permute_bytes>)->Name("BM_Vpermb");
BENCHMARK(BM_Op<Op::shuffle_bytes>)->Name("BM_Vpshufb");
BENCHMARK(BM_Op<Op::and_bits>)->Name("BM_Vpandq");
BENCHMARK(BM_Op<Op::unpack>)->Name("BM_Vpunpcklbw");
BENCHMARK(BM_Op<Op::add>)->Name("BM_Vpaddq");
BENCHMARK(BM_Op<Op::gf2p8affine>)->Name("BM_Vgf2p8affineqb");
BENCHMARK(BM_Op<Op::ternary>)->Name("BM_Vpternlogq");
BENCHMARK(BM_Op<Op::multishift>)->Name("BM_Vpmultishiftqb");
BENCHMARK(BM_Op<Op::scalef>)->Name("BM_Vscalefpd");
BENCHMARK(BM_Op<Op::rotate>)->Name("BM_Vprolq");
BENCHMARK(BM_Op<Op::dpbusd>)->Name("BM_Vpdpbusd");
BENCHMARK(BM_Op<Op::permute2_bytes>)->Name("BM_Vpermt2b");
BENCHMARK(BM_Op<Op::cvt_ps_pd>)->Name("BM_Vcvtps2pd");
BENCHMARK(BM_Op<Op::cvt_qq_pd>)->Name("BM_Vcvtqq2pd");
BENCHMARK(BM_Op<Op::fp8_multishift_and>)->Name("BM_Fp8DecodeMultishift");
BENCHMARK(BM_Op<Op::fp8_shifts_and>)->Name("BM_Fp8DecodeShifts");

BENCHMARK_MAIN();
