#include "models/dsa/index_scan.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>

#include "core/numfmt.h"
#include "kernels/dot.h"
#include "kernels/dpbf16.h"

namespace strata::dsa {

const double* e4m3_double_table() {
  static const std::array<double, 256> t = [] {
    std::array<double, 256> v{};
    for (int i = 0; i < 256; ++i) v[size_t(i)] = double(e4m3_to_f32(uint8_t(i)));
    return v;
  }();
  return t.data();
}

const uint16_t* e4m3_bf16_table() {
  static const std::array<uint16_t, 256> t = [] {
    std::array<uint16_t, 256> v{};
    for (int i = 0; i < 256; ++i) v[size_t(i)] = uint16_t(std::bit_cast<uint32_t>(e4m3_to_f32(uint8_t(i))) >> 16);
    return v;
  }();
  return t.data();
}

void index_scan_reference(const ScanQuery& q, const cache::EntryArray& keys, int64_t first, int64_t n, float* out) {
  const double* lut = e4m3_double_table();
  const int64_t heads = q.heads;
  const double* qT = q.qT;
  const float* w = q.w;
  double d[256];
  for (int64_t s = first; s < n; ++s) {
    const uint8_t* e = keys.entry(s);
    std::fill_n(d, heads, 0.0);
    for (int64_t i = 0; i < kIndexDim; ++i) {
      const double k = lut[e[i]];
      for (int64_t j = 0; j < heads; ++j) d[j] += qT[i * heads + j] * k;  // exact
    }
    double lanes[kernels::kDotLanes] = {};
    for (int64_t j = 0; j < heads; ++j) lanes[j % kernels::kDotLanes] += double(std::max(0.0f, float(d[j])) * w[j]);
    float ks;
    std::memcpy(&ks, e + kIndexDim, 4);
    out[s - first] = float(kernels::fold16(lanes)) * ks;
  }
}

void index_scan_fast_reference(const ScanQuery& q, const cache::EntryArray& keys, int64_t first, int64_t n,
                               float* out) {
  const uint16_t* bf = e4m3_bf16_table();
  const int64_t stride = index_pair_stride(q.heads);
  for (int64_t s = first; s < n; ++s) {
    const uint8_t* e = keys.entry(s);
    double lanes[kernels::kDotLanes] = {};
    for (int64_t j = 0; j < q.heads; ++j) {
      float acc = 0.0f;
      for (int64_t p = 0; p < kIndexPairs; ++p) {
        const uint32_t qp = q.pairs[p * stride + j];
        acc = kernels::dpbf16_lane(acc, uint16_t(qp), uint16_t(qp >> 16), bf[e[2 * p]], bf[e[2 * p + 1]]);
      }
      lanes[j % kernels::kDotLanes] += double(std::max(0.0f, acc) * q.w[j]);
    }
    float ks;
    std::memcpy(&ks, e + kIndexDim, 4);
    out[s - first] = float(kernels::fold16(lanes)) * ks;
  }
}

IndexScanFn index_scan_fn(Isa isa, Numerics numerics) {
  if (numerics == Numerics::fast) return isa == Isa::avx512 ? avx512::index_scan_fast : index_scan_fast_reference;
  return isa == Isa::avx512 ? avx512::index_scan : index_scan_reference;
}
IndexScanFn index_scan_fn() { return index_scan_fn(active_isa(), active_numerics()); }

}  // namespace strata::dsa
