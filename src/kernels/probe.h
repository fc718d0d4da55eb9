// Short probes of the machine's limits, so benchmarks report ratios to what this machine can
// do rather than to datasheet numbers: streaming read bandwidth, bf16 dot-product peak
// (AVX512-BF16 vdpbf16ps), int8 dot-product peak (AVX512-VNNI vpdpbusd) and fp64 FMA peak.
#pragma once
#include <cstddef>

namespace strata::kernels {

struct ProbeResult {
  double value = 0;       // GB/s, GFLOP/s or GOPS
  const char* method = "";
};

// Sums a buffer of `bytes` (allocated with huge pages and populated first) for about
// `seconds`, over `threads` threads; best of the passes.
ProbeResult probe_read_bandwidth(size_t bytes, int threads, double seconds);
// Dependent-chain-free dot-product loops in registers for about `seconds`.
ProbeResult probe_bf16_peak(int threads, double seconds);
ProbeResult probe_int8_peak(int threads, double seconds);
// fp64 FMA peak (vfmadd231pd zmm): the ceiling of every product strata computes, since the
// canonical dot (kernels/dot.h) is one fp64 FMA lane per multiply-add.
ProbeResult probe_fp64_peak(int threads, double seconds);

}  // namespace strata::kernels
