#include "models/layers/kv_dots.h"

#include "core/numfmt.h"
#include "kernels/dot.h"

namespace strata::models {

namespace avx512 {
double kv_dot(const float* q, const uint16_t* k, int64_t n);
void kv_dots(const double* q, int64_t qs, int64_t G, const uint16_t* k, int64_t n, double* out);
void kv_accumulate(double* acc, int64_t G, const double* p, const uint16_t* const* v, int64_t nk, int64_t n);
}  // namespace avx512

namespace {

double kv_dot_scalar(const float* q, const uint16_t* k, int64_t n) {
  double l[kernels::kDotLanes] = {};
  for (int64_t i = 0; i < n; i += kernels::kDotLanes)
    for (int j = 0; j < kernels::kDotLanes; ++j) l[j] = l[j] + double(q[i + j]) * double(bf16_to_f32(k[i + j]));
  return kernels::fold16(l);
}

void kv_dots_scalar(const double* q, int64_t qs, int64_t G, const uint16_t* k, int64_t n, double* out) {
  for (int64_t g = 0; g < G; ++g) {
    double l[kernels::kDotLanes] = {};
    for (int64_t i = 0; i < n; i += kernels::kDotLanes)
      for (int j = 0; j < kernels::kDotLanes; ++j) l[j] = l[j] + q[g * qs + i + j] * double(bf16_to_f32(k[i + j]));
    out[g] = kernels::fold16(l);
  }
}

void kv_accumulate_scalar(double* acc, int64_t G, const double* p, const uint16_t* const* v, int64_t nk, int64_t n) {
  for (int64_t j = 0; j < nk; ++j)
    for (int64_t g = 0; g < G; ++g)
      for (int64_t i = 0; i < n; ++i) acc[g * n + i] = acc[g * n + i] + p[j * G + g] * double(bf16_to_f32(v[j][i]));
}

}  // namespace

KvDots kv_dots(Isa isa) {
  if (isa == Isa::avx512) return {avx512::kv_dot, avx512::kv_dots, avx512::kv_accumulate};
  return {kv_dot_scalar, kv_dots_scalar, kv_accumulate_scalar};
}

KvDots kv_dots() { return kv_dots(active_isa()); }

}  // namespace strata::models
