#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/numerics.h"
#include "core/numfmt.h"
#include "kernels/aligned_buffer.h"
#include "kernels/dot.h"
#include "kernels/fast_linear.h"
#include "kernels/linear.h"
#include "kernels/linear_profile.h"
#include "kernels/parallel.h"
#include "kernels/quant.h"

namespace strata::kernels {

namespace {
struct Lut {
  float e4m3[256], e8m0[256], e2m1[16];
  Lut() {
    for (int i = 0; i < 256; ++i) e4m3[i] = e4m3_to_f32(uint8_t(i)), e8m0[i] = e8m0_to_f32(uint8_t(i));
    for (int i = 0; i < 16; ++i) e2m1[i] = e2m1_to_f32(uint8_t(i));
  }
};
const Lut& lut() {
  static const Lut l;
  return l;
}
}  // namespace

void dequant_row(const LinearWeight& w, int64_t r, float* dst) {
  const Lut& L = lut();
  const int64_t in = w.in;
  switch (w.format) {
    case WeightFormat::f32: {
      const float* p = static_cast<const float*>(w.data) + r * in;
      for (int64_t k = 0; k < in; ++k) dst[k] = p[k];
      break;
    }
    case WeightFormat::bf16: {
      const uint16_t* p = static_cast<const uint16_t*>(w.data) + r * in;
      for (int64_t k = 0; k < in; ++k) dst[k] = bf16_to_f32(p[k]);
      break;
    }
    case WeightFormat::fp8: {
      const uint8_t* p = static_cast<const uint8_t*>(w.data) + r * in;
      const int64_t sc = (in + 127) / 128;
      const uint8_t* s = w.scale + (r / 128) * sc;
      for (int64_t k = 0; k < in; ++k) dst[k] = L.e4m3[p[k]] * L.e8m0[s[k / 128]];
      break;
    }
    case WeightFormat::fp4: {
      const uint8_t* p = static_cast<const uint8_t*>(w.data) + r * (in / 2);
      const uint8_t* s = w.scale + r * (in / 32);
      for (int64_t k = 0; k < in; k += 2) {
        const uint8_t b = p[k / 2];
        const float sk = L.e8m0[s[k / 32]];
        dst[k] = L.e2m1[b & 0xF] * sk;
        dst[k + 1] = L.e2m1[b >> 4] * sk;
      }
      break;
    }
  }
}

LinearWeight weight_rows(const LinearWeight& w, int64_t r0, int64_t n) {
  if (r0 < 0 || n < 0 || r0 + n > w.out) throw Error("weight_rows: rows out of range");
  LinearWeight s = w;
  s.out = n;
  const auto* d = static_cast<const uint8_t*>(w.data);
  switch (w.format) {
    case WeightFormat::f32: s.data = d + r0 * w.in * 4; break;
    case WeightFormat::bf16: s.data = d + r0 * w.in * 2; break;
    case WeightFormat::fp8:
      if (r0 % 128 != 0) throw Error("weight_rows: an FP8 slice must start on a 128-row scale block");
      s.data = d + r0 * w.in;
      s.scale = w.scale + (r0 / 128) * ((w.in + 127) / 128);
      break;
    case WeightFormat::fp4:
      s.data = d + r0 * (w.in / 2);
      s.scale = w.scale + r0 * (w.in / 32);
      break;
  }
  return s;
}

DequantFn dequant_fn(Isa isa) { return isa == Isa::avx512 ? avx512::dequant_row : dequant_row; }

namespace {
void linear_unprofiled(const LinearWeight& w, const float* x, int64_t rows, float* y, bool rb, Numerics numerics);

void linear_timed(const LinearWeight& w, const float* x, int64_t rows, float* y, bool rb, Numerics numerics) {
  if (!linear_profile_on()) return linear_unprofiled(w, x, rows, y, rb, numerics);
  const auto t0 = std::chrono::steady_clock::now();
  linear_unprofiled(w, x, rows, y, rb, numerics);
  linear_profile_record(w, rows, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}
}  // namespace

void linear(const LinearWeight& w, const float* x, int64_t rows, float* y, bool rb) {
  linear_timed(w, x, rows, y, rb, active_numerics());
}

void linear_exact(const LinearWeight& w, const float* x, int64_t rows, float* y, bool rb) {
  linear_timed(w, x, rows, y, rb, Numerics::exact);
}

namespace {
// The activation widened to fp64 in buf, for the routes that read it; the panel GEMM reads the
// fp32 rows alone (rows × in × 8 bytes written per call for nothing): nullptr there.
const double* fp64_copy_for_route(const LinearWeight& w, const float* x, int64_t rows, AlignedBuffer<double>& buf) {
  if (avx512::linear_route(w, rows) == avx512::LinearRoute::panel) return nullptr;
  buf.reserve(size_t(rows * w.in));
  avx512::widen_activation(w, x, rows, buf.data());
  return buf.data();
}

void linear_unprofiled(const LinearWeight& w, const float* x, int64_t rows, float* y, bool rb, Numerics numerics) {
  if (w.empty()) throw Error("linear: weight is missing");
  const int64_t in = w.in, out = w.out;
  const bool quantized = (w.format == WeightFormat::fp8 || w.format == WeightFormat::fp4) && w.act_quant;
  std::vector<float> xq;
  if (quantized) {
    xq.resize(size_t(rows * in));
    // rows on the threads: a 256-row prefill's quantization is ~10% of the fast profile's product
    parallel_for(rows, std::max<int64_t>(1, (int64_t(1) << 15) / std::max<int64_t>(1, in)), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) quant_fp8(x + r * in, in, kActBlock, xq.data() + r * in);
    });
    x = xq.data();
  }
  if (numerics == Numerics::fast) return fast_linear(w, x, rows, y, rb);
  if (active_isa() == Isa::avx512 && avx512::linear_supported(w)) {
    const int64_t blocks = (out + 3) / 4;
    // Up to ~16 chunks a thread, in whole 128-row bands (FP8's scale band: its GEMV scales the
    // activation once per band and call): with a fixed half each, the thread that started
    // second (or reads slower memory) set the pace, and the other waited ~10% of a decode
    // step. FP4 keeps a chunk a thread: its integer route prepares the activation per chunk.
    const int64_t threads = num_threads();
    const int64_t chunks = w.format == WeightFormat::fp4 ? threads : 16 * threads;
    const int64_t grain = w.format == WeightFormat::fp4 ? (blocks + chunks - 1) / chunks
                                                        : std::max<int64_t>(32, (blocks + chunks - 1) / chunks / 32 * 32);
    // Few outputs over many activation rows (mHC's 24 mixes, the indexer's 64 head weights, at
    // prefill): too few weight-row chunks to go round, so the threads take activation rows
    // instead, every output of their rows. Each output is the same canonical dot either way.
    const bool by_rows = threads > 1 && (blocks + grain - 1) / grain < threads && rows >= 2 * threads &&
                         out * in * rows >= (int64_t(1) << 16) * threads;
    if (by_rows) {
      parallel_for(rows, 1, [&](int64_t r0, int64_t r1) {
        const int64_t n = r1 - r0;
        thread_local AlignedBuffer<double> panel, xd;
        panel.reserve(size_t(avx512::linear_panel_doubles(in, n)));
        // the route of this thread's share (run inline, all the rows)
        const double* x64 = fp64_copy_for_route(w, x + r0 * in, n, xd);
        avx512::linear_range(w, x64, x + r0 * in, n, y + r0 * out, rb, 0, out, panel.data());
      });
      return;
    }
    AlignedBuffer<double> xd;
    const double* x64 = fp64_copy_for_route(w, x, rows, xd);
    const int64_t min_blocks = std::max<int64_t>(4, (int64_t(1) << 16) / std::max<int64_t>(1, 4 * in * rows));
    parallel_for_dynamic(blocks, min_blocks, grain, [&](int64_t b, int64_t e) {
      thread_local AlignedBuffer<double> panel;
      panel.reserve(size_t(avx512::linear_panel_doubles(in, rows)));
      avx512::linear_range(w, x64, x, rows, y, rb, b * 4, std::min(out, e * 4), panel.data());
    });
    return;
  }
  // Output rows split across threads; each weight row is dequantized once for the whole batch.
  const DotFn dotf = dot_fn();  // every ISA's dot is bit-identical (kernels/dot.h)
  const DequantFn deq = dequant_fn(active_isa());
  // Small products run inline: handing work to the pool costs more than it saves below ~64K MACs.
  const int64_t min_rows = std::max<int64_t>(16, (int64_t(1) << 16) / std::max<int64_t>(1, in * rows));
  parallel_for(out, min_rows, [&](int64_t b, int64_t e) {
    std::vector<float> row(static_cast<size_t>(in));
    for (int64_t n = b; n < e; ++n) {
      deq(w, n, row.data());
      for (int64_t r = 0; r < rows; ++r) {
        float v = dotf(x + r * in, row.data(), in);
        y[r * out + n] = rb ? round_bf16(v) : v;
      }
    }
  });
}

}  // namespace

}  // namespace strata::kernels
