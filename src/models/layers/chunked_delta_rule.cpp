#include "models/layers/chunked_delta_rule.h"

#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/parallel.h"
#include "models/layers/chunked_delta_rule_body.h"

namespace strata::models {

namespace scalar {
// Baseline x86-64 (SSE2, 4 lanes): tiles of 4 rows × 2 vectors, 8 of the 16 registers.
void chunked_delta_head(const ChunkedDeltaArgs& a, int64_t h, const ChunkedDeltaScratch& s) {
  chunked_delta_head_impl<4, 4, 2>(a, h, s);
}
}  // namespace scalar

namespace {

using HeadFn = void (*)(const ChunkedDeltaArgs&, int64_t, const ChunkedDeltaScratch&);

HeadFn head_fn(Isa isa) {
  switch (isa) {
    case Isa::avx512: return avx512::chunked_delta_head;
    case Isa::avx2: return avx2::chunked_delta_head;
    default: return scalar::chunked_delta_head;
  }
}

void run(HeadFn fn, const ChunkedDeltaArgs& a) {
  if (a.chunk < 1) throw Error("chunked delta rule: chunk must be at least 1 token, got " + std::to_string(a.chunk));
  if (a.n <= 0) return;
  const int64_t C = a.n < a.chunk ? a.n : a.chunk, dk = a.dk, dv = a.dv;
  // Heads are independent and each runs whole on one thread: the split changes no bits.
  kernels::parallel_for(a.heads, 1, [&](int64_t h0, int64_t h1) {
    std::vector<double> gam(static_cast<size_t>(C));
    std::vector<float> buf(static_cast<size_t>(2 * C + dk * C + 2 * C * C + C * (dv + dk) + C * dk + C * dv));
    ChunkedDeltaScratch s{};
    s.gam = gam.data();
    float* p = buf.data();
    for (auto [dst, size] : {std::pair{&s.eg, C}, {&s.er, C}, {&s.kt, dk * C}, {&s.a, C * C}, {&s.p, C * C},
                             {&s.x, C * (dv + dk)}, {&s.qe, C * dk}, {&s.ws, C * dv}}) {
      *dst = p;
      p += size;
    }
    for (int64_t h = h0; h < h1; ++h) fn(a, h, s);
  });
}

}  // namespace

void chunked_delta_rule(const float* q, const float* k, const float* v, const float* g, const float* beta, int64_t n,
                        int64_t heads, int64_t dk, int64_t dv, float* state, float* out, int64_t chunk) {
  run(head_fn(active_isa()), {q, k, v, g, beta, n, heads, dk, dv, chunk, state, out});
}

void chunked_delta_rule(Isa isa, const float* q, const float* k, const float* v, const float* g, const float* beta,
                        int64_t n, int64_t heads, int64_t dk, int64_t dv, float* state, float* out, int64_t chunk) {
  if (int(isa) > int(detected_isa()))
    throw Error("chunked delta rule: this CPU lacks " + std::string(isa_name(isa)));
  run(head_fn(isa), {q, k, v, g, beta, n, heads, dk, dv, chunk, state, out});
}

}  // namespace strata::models
