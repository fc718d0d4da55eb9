// mHC (manifold-constrained hyper-connections): the residual is hc_mult streams of d numbers.
// hc_pre reads all streams (RMS over the flattened hc·d fp32 state), makes (2+hc)·hc mixes,
// splits them with Sinkhorn (kernels/sinkhorn.h) and returns the sublayer input Σ pre_j X_j;
// hc_post writes back X'_k = post_k · F + Σ_j comb[j][k] X_j; hc_head collapses the streams at
// the top with sigmoid weights. Outputs are rounded to bf16 like the reference's tensors.
#pragma once
#include <cstdint>

#include "models/deepseek_v4/weights.h"

namespace strata::dsv4 {

struct HcSpec {
  int64_t hc = 4, dim = 0, sinkhorn_iters = 20;
  float hc_eps = 1e-6f, norm_eps = 1e-6f;
};

// state: [hc][dim]; y: [dim]; post: [hc]; comb: [hc][hc].
void hc_pre(const HcWeights& w, const HcSpec& s, const float* state, float* y, float* post, float* comb);
// state is replaced by the new streams.
void hc_post(const HcSpec& s, const float* f, const float* post, const float* comb, float* state);
void hc_head(const HcWeights& w, const HcSpec& s, const float* state, float* y);
// The same for `rows` states at once (state: [rows][hc][dim], y: [rows][dim], post: [rows][hc],
// comb: [rows][hc][hc]), bitwise hc_pre / hc_post per row: the mixes of every row as one
// product (the same canonical dots), the rest a row per thread.
void hc_pre_rows(const HcWeights& w, const HcSpec& s, const float* state, int64_t rows, float* y, float* post, float* comb);
void hc_post_rows(const HcSpec& s, const float* f, const float* post, const float* comb, int64_t rows, float* state);

}  // namespace strata::dsv4
