#include "models/dsa/index_scan.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "core/numfmt.h"
#include "kernels/dot.h"

namespace strata::dsa {

const double* e4m3_double_table() {
  static const std::array<double, 256> t = [] {
    std::array<double, 256> v{};
    for (int i = 0; i < 256; ++i) v[size_t(i)] = double(e4m3_to_f32(uint8_t(i)));
    return v;
  }();
  return t.data();
}

void index_scan_reference(const double* qT, const float* w, int64_t heads, const cache::EntryArray& keys, int64_t first,
                          int64_t n, float* out) {
  const double* lut = e4m3_double_table();
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

IndexScanFn index_scan_fn(Isa isa) { return isa == Isa::avx512 ? avx512::index_scan : index_scan_reference; }
IndexScanFn index_scan_fn() { return index_scan_fn(active_isa()); }

}  // namespace strata::dsa
