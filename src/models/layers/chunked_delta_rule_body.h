// The chunked delta rule's work for one value head (chunked_delta_rule.h has the math). Compiled
// once per ISA: chunked_delta_rule.cpp and the translation units under avx2/ and avx512/ include
// this file, so every ISA runs the same source and gets the same bits. The code lives in an
// unnamed namespace, giving each translation unit its own copy (a shared inline copy could be
// the AVX-512 one, picked by the linker for the scalar caller), and it calls no library
// templates, whose out-of-line copies would be shared the same way.
#pragma once
#include <cmath>
#include <cstdint>

namespace strata::models {

struct ChunkedDeltaArgs {
  const float *q, *k, *v, *g, *beta;
  int64_t n, heads, dk, dv, chunk;
  float *state, *out;
};

// One worker's scratch for a chunk of C tokens (chunked_delta_rule.cpp sizes it).
struct ChunkedDeltaScratch {
  double* gam;  // [C] cumulative log-decay
  float* eg;    // [C] e^{γ_i}
  float* er;    // [C] e^{γ_last − γ_i}
  float* kt;    // [dk][C] Kᵀ, later scaled by er
  float* a;     // [C][C] −A (strictly lower)
  float* p;     // [C][C] (Q Kᵀ) ⊙ D (lower, zero above)
  float* x;     // [C][dv + dk] [U | W], then [V' | W]
  float* qe;    // [C][dk] e^γ Q
  float* ws;    // [C][dv] W S
};

namespace avx2 { void chunked_delta_head(const ChunkedDeltaArgs& a, int64_t h, const ChunkedDeltaScratch& s); }
namespace avx512 { void chunked_delta_head(const ChunkedDeltaArgs& a, int64_t h, const ChunkedDeltaScratch& s); }

// FMA would round a·b + c once instead of twice, and only where the ISA has it: contraction
// off, so that every ISA's build computes the same bits.
#if defined(__clang__)
#pragma clang fp contract(off)
#else
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif

namespace {

// W fp32 lanes (the ISA's vector width) as a GCC vector type, loaded and stored unaligned.
template <int W>
struct Lanes {
  typedef float V __attribute__((vector_size(4 * W), aligned(4)));
};
template <class V>
inline V load(const float* p) {
  V x;
  __builtin_memcpy(&x, p, sizeof x);
  return x;
}
template <class V>
inline void store(float* p, V x) {
  __builtin_memcpy(p, &x, sizeof x);
}

// C[MR rows][NV·W columns] += A[MR][K] · B[K][NV·W]: each element adds its K products in
// ascending k to the value C holds. The MR × NV vectors of sums stay in registers while k runs.
template <int W, int MR, int NV>
inline void gemm_tile(int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc) {
  using V = typename Lanes<W>::V;
  V acc[MR][NV];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) acc[r][v] = load<V>(C + r * ldc + v * W);
  for (int64_t k = 0; k < K; ++k) {
    V b[NV];
    for (int v = 0; v < NV; ++v) b[v] = load<V>(B + k * ldb + v * W);
    for (int r = 0; r < MR; ++r) {
      const float ar = A[r * lda + k];
      for (int v = 0; v < NV; ++v) acc[r][v] = acc[r][v] + ar * b[v];
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) store<V>(C + r * ldc + v * W, acc[r][v]);
}

template <int W, int MR, int NV>
inline void gemm_rows(int64_t M, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb, float* C,
                      int64_t ldc) {
  int64_t i = 0;
  for (; i + MR <= M; i += MR) gemm_tile<W, MR, NV>(K, A + i * lda, lda, B, ldb, C + i * ldc, ldc);
  for (; i < M; ++i) gemm_tile<W, 1, NV>(K, A + i * lda, lda, B, ldb, C + i * ldc, ldc);
}

// C[M][N] += A[M][K] · B[K][N], row-major with leading dimensions. Tiles of MR rows × NV
// vectors, then single vectors, then single columns: the tiling changes the speed only, every
// element's sum runs in the same order.
template <int W, int MR, int NV>
inline void gemm_acc(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
                     float* C, int64_t ldc) {
  int64_t j = 0;
  for (; j + NV * W <= N; j += NV * W) gemm_rows<W, MR, NV>(M, K, A, lda, B + j, ldb, C + j, ldc);
  for (; j + W <= N; j += W) gemm_rows<W, MR, 1>(M, K, A, lda, B + j, ldb, C + j, ldc);
  for (; j < N; ++j)
    for (int64_t i = 0; i < M; ++i) {
      float c = C[i * ldc + j];
      for (int64_t k = 0; k < K; ++k) c = c + A[i * lda + k] * B[k * ldb + j];
      C[i * ldc + j] = c;
    }
}

// W, MR, NV: the products' tiles (gemm_tile), chosen per ISA.
template <int W, int MR, int NV>
inline void chunked_delta_head_impl(const ChunkedDeltaArgs& args, int64_t h, const ChunkedDeltaScratch& s) {
  const int64_t H = args.heads, dk = args.dk, dv = args.dv, dx = dv + dk;
  const int64_t ldq = H * dk, ldv = H * dv;  // consecutive tokens' rows of one head
  // Local copies of the scratch pointers: stores through a float* could otherwise alias the
  // struct and force every loop to reload them (the project builds with -fno-strict-aliasing).
  double* gam = s.gam;
  float *eg = s.eg, *er = s.er, *kt = s.kt, *am = s.a, *pm = s.p, *x = s.x, *qe = s.qe, *ws = s.ws;
  float* S = args.state + h * dk * dv;
  for (int64_t c0 = 0; c0 < args.n; c0 += args.chunk) {
    const int64_t L = args.n - c0 < args.chunk ? args.n - c0 : args.chunk;
    const float* Q = args.q + (c0 * H + h) * dk;
    const float* K = args.k + (c0 * H + h) * dk;
    const float* V = args.v + (c0 * H + h) * dv;
    const float* G = args.g + c0 * H + h;
    const float* B = args.beta + c0 * H + h;
    float* O = args.out + (c0 * H + h) * dv;
    // One head's rows lie a token's width apart (heads·dk floats, 8 KB for Qwen3.5-0.8B), a
    // stride the hardware prefetchers do not follow: fetch the next chunk's q, k, v rows while
    // this chunk computes (a quarter of the AVX-512 kernel's time went to those misses).
    if (c0 + args.chunk < args.n) {
      const int64_t next = args.n - c0 - args.chunk < args.chunk ? args.n - c0 - args.chunk : args.chunk;
      for (int64_t i = 0; i < next; ++i) {
        for (int64_t m = 0; m < dk; m += 16) {
          __builtin_prefetch(Q + (args.chunk + i) * ldq + m, 0, 2);
          __builtin_prefetch(K + (args.chunk + i) * ldq + m, 0, 2);
        }
        for (int64_t j = 0; j < dv; j += 16) __builtin_prefetch(V + (args.chunk + i) * ldv + j, 0, 2);
      }
    }
    // The triangular products go by blocks of MR rows (tokens), each computing only the columns
    // up to its last row (K Kᵀ, Q Kᵀ: rounded up to whole vectors) or the terms up to it (P V').
    auto upto = [&](int64_t i0) {
      const int64_t e = (i0 + MR + W - 1) / W * W;
      return e < L ? e : L;
    };

    // The decays as differences of cumulative log-decays (fp64, so that a difference of two
    // large sums keeps its precision), exponentiated only where the difference is ≤ 0.
    double gsum = 0;
    for (int64_t i = 0; i < L; ++i) gam[i] = gsum = gsum + double(G[i * H]);
    const double glast = gam[L - 1];
    for (int64_t i = 0; i < L; ++i) {
      eg[i] = float(std::exp(gam[i]));
      er[i] = float(std::exp(glast - gam[i]));
    }
    const float elast = float(std::exp(glast));

    // Kᵀ, so that K Kᵀ and Q Kᵀ are row-times-matrix products like the others.
    for (int64_t i = 0; i < L; ++i)
      for (int64_t m = 0; m < dk; ++m) kt[m * L + i] = K[i * ldq + m];
    for (int64_t e = 0; e < L * L; ++e) am[e] = pm[e] = 0.0f;
    for (int64_t i0 = 0; i0 < L; i0 += MR) {
      const int64_t rows = L - i0 < MR ? L - i0 : MR;
      gemm_acc<W, MR, NV>(rows, upto(i0), dk, K + i0 * ldq, ldq, kt, L, am + i0 * L, L);
      gemm_acc<W, MR, NV>(rows, upto(i0), dk, Q + i0 * ldq, ldq, kt, L, pm + i0 * L, L);
    }
    // −A = −β_i (k_i·k_j) D[i][j] below the diagonal (negated: the substitution then adds);
    // P = (q_i·k_j) D[i][j] on and below it; zeros above.
    for (int64_t i = 0; i < L; ++i) {
      const float bi = B[i * H];
      float* ai = am + i * L;
      float* pi = pm + i * L;
      for (int64_t j = 0; j < i; ++j) {
        const float d = float(std::exp(gam[i] - gam[j]));
        ai[j] = -(bi * ai[j] * d);
        pi[j] = pi[j] * d;
      }
      for (int64_t j = i; j < L; ++j) ai[j] = 0.0f;
      for (int64_t j = i + 1; j < L; ++j) pi[j] = 0.0f;
    }

    // (I + A) [U | W] = [βV | β e^γ K] by forward substitution: row i adds −A[i][j]·row j for
    // j < i in ascending j. By blocks of MR rows: the rows before the block first (one product),
    // then the block's own earlier rows; the same terms in the same order.
    for (int64_t i = 0; i < L; ++i) {
      const float bi = B[i * H], be = bi * eg[i];
      float* xi = x + i * dx;
      for (int64_t j = 0; j < dv; ++j) xi[j] = bi * V[i * ldv + j];
      for (int64_t m = 0; m < dk; ++m) xi[dv + m] = be * K[i * ldq + m];
    }
    for (int64_t i0 = 0; i0 < L; i0 += MR) {
      const int64_t rows = L - i0 < MR ? L - i0 : MR;
      gemm_acc<W, MR, NV>(rows, dx, i0, am + i0 * L, L, x, dx, x + i0 * dx, dx);
      for (int64_t r = 1; r < rows; ++r)
        gemm_acc<W, MR, NV>(1, dx, r, am + (i0 + r) * L + i0, L, x + i0 * dx, dx, x + (i0 + r) * dx, dx);
    }

    // V' = U − W S (S: the state at the chunk's start).
    for (int64_t e = 0; e < L * dv; ++e) ws[e] = 0.0f;
    gemm_acc<W, MR, NV>(L, dv, dk, x + dv, dx, S, dv, ws, dv);
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < dv; ++j) x[i * dx + j] = x[i * dx + j] - ws[i * dv + j];

    // O = (e^γ Q) S + P V': what the chunk's start state gives, then the chunk's own tokens.
    for (int64_t i = 0; i < L; ++i)
      for (int64_t m = 0; m < dk; ++m) qe[i * dk + m] = eg[i] * Q[i * ldq + m];
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < dv; ++j) O[i * ldv + j] = 0.0f;
    gemm_acc<W, MR, NV>(L, dv, dk, qe, dk, S, dv, O, ldv);
    for (int64_t i0 = 0; i0 < L; i0 += MR) {
      const int64_t rows = L - i0 < MR ? L - i0 : MR;
      gemm_acc<W, MR, NV>(rows, dv, i0 + rows, pm + i0 * L, L, x, dx, O + i0 * ldv, ldv);
    }

    // S ← e^{γ_last} S + (e^{γ_last − γ} K)ᵀ V'.
    for (int64_t e = 0; e < dk * dv; ++e) S[e] = S[e] * elast;
    for (int64_t m = 0; m < dk; ++m)
      for (int64_t i = 0; i < L; ++i) kt[m * L + i] = kt[m * L + i] * er[i];
    gemm_acc<W, MR, NV>(dk, dv, L, kt, L, x, dx, S, dv);
  }
}

}  // namespace

#if !defined(__clang__)
#pragma GCC pop_options
#endif

}  // namespace strata::models
