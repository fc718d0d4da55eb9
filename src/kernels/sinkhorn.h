// mHC's split of the 24 (= (2+hc)·hc) mixes into pre, post and comb, with the Sinkhorn
// normalization of comb, exactly as DeepSeek's hc_split_sinkhorn:
//   pre  = sigmoid(m[0:hc]·s0 + b) + eps          post = 2·sigmoid(m[hc:2hc]·s1 + b)
//   comb = row-softmax(m[2hc:]·s2 + b) + eps, then column-normalize (x / (colsum + eps)),
//          then iters−1 rounds of row-normalize and column-normalize, eps in each denominator.
// comb is row-major [hc][hc]: comb[i*hc + l], rows i, columns l.
#pragma once
#include <cstdint>

namespace strata::kernels {

void hc_split_sinkhorn(const float* mixes, const float* scale3, const float* base, int64_t hc, int64_t iters,
                       float eps, float* pre, float* post, float* comb);

// fp32 sigmoid evaluated in fp64 and rounded once (as the reference does).
inline float sigmoid(float x) { return float(1.0 / (1.0 + __builtin_exp(-double(x)))); }

}  // namespace strata::kernels
