// The compressor's per-token state machine equals the reference's all-at-once prefill
// formulation (blocks cut from the whole sequence, overlap transform, per-channel softmax),
// bit for bit, for ratio 4 (overlap), ratio 128, and the indexer's rotate + FP4 variant.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "core/numfmt.h"
#include "kernels/hadamard.h"
#include "kernels/quant.h"
#include "kernels/rmsnorm.h"
#include "models/dsv4_fixture.h"

namespace strata::dsv4 {
namespace {

testing::TinyModel& tiny() {
  static testing::TinyModel m;
  return m;
}

// Reference prefill: pool every complete block of the S tokens at once.
std::vector<float> all_at_once(const CompressorWeights& w, const CompressorSpec& s, const std::vector<float>& kv,
                               const std::vector<float>& score, int64_t S) {
  const int64_t r = s.ratio, d = s.head_dim;
  const bool overlap = r == 4;
  const int64_t width = overlap ? 2 * d : d;
  std::vector<float> out;
  for (int64_t b = 0; b < S / r; ++b) {
    std::vector<float> e(static_cast<size_t>(d));
    for (int64_t c = 0; c < d; ++c) {
      std::vector<float> sv, kvv;
      if (overlap)
        for (int64_t j = 0; j < r; ++j) {
          if (b == 0) {
            sv.push_back(-std::numeric_limits<float>::infinity());
            kvv.push_back(0.0f);
          } else {
            const int64_t t = (b - 1) * r + j;
            sv.push_back(score[size_t(t * width + c)] + w.ape[j * width + c]);
            kvv.push_back(kv[size_t(t * width + c)]);
          }
        }
      const int64_t off = overlap ? d : 0;
      for (int64_t j = 0; j < r; ++j) {
        const int64_t t = b * r + j;
        sv.push_back(score[size_t(t * width + off + c)] + w.ape[j * width + off + c]);
        kvv.push_back(kv[size_t(t * width + off + c)]);
      }
      double m = -INFINITY, sum = 0;
      for (float v : sv) m = std::max(m, double(v));
      std::vector<double> ex;
      for (float v : sv) ex.push_back(std::exp(double(v) - m)), sum += ex.back();
      float acc = 0;
      for (size_t j = 0; j < sv.size(); ++j) acc += kvv[j] * float(ex[j] / sum);
      e[size_t(c)] = round_bf16(acc);
    }
    kernels::rms_norm(e.data(), w.norm, d, s.norm_eps, e.data());
    s.rope->apply(e.data() + d - s.rope_dim, b * r);
    if (s.rotate) {
      kernels::hadamard(e.data(), d);
      kernels::fake_quant_fp4(e.data(), d, 32);
    } else {
      kernels::fake_quant_fp8(e.data(), d - s.rope_dim, 64);
    }
    out.insert(out.end(), e.begin(), e.end());
  }
  return out;
}

void check(const CompressorWeights& w, const CompressorSpec& s, int64_t S) {
  Model& m = *tiny().model;
  const int64_t dim = m.config().hidden_size;
  std::mt19937 rng(uint32_t(S * 31 + s.ratio));
  std::normal_distribution<float> nd;
  std::vector<float> x(size_t(S * dim));
  for (auto& v : x) v = round_bf16(nd(rng));
  const int64_t width = (s.ratio == 4 ? 2 : 1) * s.head_dim;
  std::vector<float> kv(size_t(S * width)), score(size_t(S * width));
  compressor_project(w, s, x.data(), S, kv.data(), score.data());
  CompressorState st;
  st.init(s.ratio, s.rotate ? EntryCodec::index(s.head_dim, IndexKeyFormat::fp8) : EntryCodec::kv(s.head_dim, s.rope_dim));
  int64_t produced = 0;
  for (int64_t t = 0; t < S; ++t) {
    bool made = compressor_step(w, s, st, kv.data() + t * width, score.data() + t * width, t);
    EXPECT_EQ(made, (t + 1) % s.ratio == 0) << t;
    produced += made;
  }
  EXPECT_EQ(produced, S / s.ratio);
  std::vector<float> ref = all_at_once(w, s, kv, score, S);
  const std::vector<float> got = st.values();
  ASSERT_EQ(ref.size(), got.size());
  EXPECT_TRUE(ref == got) << "token-by-token entries differ from all-at-once pooling";
  for (float v : got) {
    ASSERT_TRUE(std::isfinite(v));
    ASSERT_EQ(v, round_bf16(v));
  }
}

TEST(Dsv4Compressor, Ratio4OverlapTokenByTokenEqualsAllAtOnce) {
  Model& m = *tiny().model;
  ASSERT_EQ(m.attention_spec(2).ratio, 4);
  check(m.weights().layers[2].attn.compressor, m.attention_spec(2).compressor, 37);
}

TEST(Dsv4Compressor, IndexerCompressorRotatesAndQuantizesToFp4) {
  Model& m = *tiny().model;
  const auto& s = m.attention_spec(2).indexer.compressor;
  ASSERT_TRUE(s.rotate);
  check(m.weights().layers[2].attn.indexer.compressor, s, 21);
}

TEST(Dsv4Compressor, Ratio128TokenByTokenEqualsAllAtOnce) {
  Model& m = *tiny().model;
  ASSERT_EQ(m.attention_spec(3).ratio, 128);
  check(m.weights().layers[3].attn.compressor, m.attention_spec(3).compressor, 300);
}

}  // namespace
}  // namespace strata::dsv4
