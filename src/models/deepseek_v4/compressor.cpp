#include "models/deepseek_v4/compressor.h"

#include <cmath>
#include <limits>

#include "core/numfmt.h"
#include "kernels/hadamard.h"
#include "kernels/quant.h"
#include "kernels/rmsnorm.h"

namespace strata::dsv4 {

void CompressorState::init(int64_t r, EntryCodec c) {
  ratio = r;
  codec = c;
  const int64_t hd = head_dim = c.head_dim;
  overlap = r == 4;
  const int64_t coff = overlap ? 2 : 1;
  kv.assign(size_t(coff * r * coff * hd), 0.0f);
  score.assign(size_t(coff * r * coff * hd), -std::numeric_limits<float>::infinity());
  entries.init(c.bytes());
}

std::vector<float> CompressorState::values() const {
  std::vector<float> v(size_t(n_entries() * head_dim));
  for (int64_t i = 0; i < n_entries(); ++i) entry_values(i, v.data() + i * head_dim);
  return v;
}

void compressor_project(const CompressorWeights& w, const CompressorSpec& s, const float* x, int64_t rows, float* kv,
                        float* score) {
  // "compression need fp32": bf16 weights upcast, fp32 outputs
  kernels::linear(w.wkv, x, rows, kv, false);
  kernels::linear(w.wgate, x, rows, score, false);
}

bool compressor_step(const CompressorWeights& w, const CompressorSpec& s, CompressorState& st, const float* kv,
                     const float* score, int64_t pos, cache::UndoLog* undo) {
  const int64_t r = s.ratio, d = s.head_dim;
  const int64_t coff = st.overlap ? 2 : 1, width = coff * d;
  const int64_t slot = (st.overlap ? r : 0) + pos % r;
  const float* ape = w.ape + (pos % r) * width;
  cache::save_before_write(undo, pos, st.kv.data() + slot * width, size_t(width));
  cache::save_before_write(undo, pos, st.score.data() + slot * width, size_t(width));
  for (int64_t c = 0; c < width; ++c) {
    st.kv[size_t(slot * width + c)] = kv[c];
    st.score[size_t(slot * width + c)] = score[c] + ape[c];
  }
  if ((pos + 1) % r != 0) return false;

  // Pool: per channel c, softmax over the slots that feed it.
  std::vector<float> out(static_cast<size_t>(d));
  const int64_t nslots = coff * r;
  for (int64_t c = 0; c < d; ++c) {
    // slot j reads channel c (previous block, overlap) or c + d (current block, overlap)
    auto col = [&](int64_t j) { return st.overlap && j >= r ? c + d : c; };
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < nslots; ++j) m = std::max(m, st.score[size_t(j * width + col(j))]);
    // softmax in fp64, each weight rounded once to fp32; weighted sum in fp32
    double sum = 0.0, e[256];
    for (int64_t j = 0; j < nslots; ++j) {
      e[j] = std::exp(double(st.score[size_t(j * width + col(j))]) - double(m));
      sum += e[j];
    }
    float acc = 0.0f;
    for (int64_t j = 0; j < nslots; ++j) acc += st.kv[size_t(j * width + col(j))] * float(e[j] / sum);
    out[size_t(c)] = round_bf16(acc);  // kv.to(bf16)
  }
  if (st.overlap) {  // the finished block becomes the next entry's previous block
    cache::save_before_write(undo, pos, st.kv.data(), size_t(r * width));
    cache::save_before_write(undo, pos, st.score.data(), size_t(r * width));
    std::copy(st.kv.begin() + r * width, st.kv.end(), st.kv.begin());
    std::copy(st.score.begin() + r * width, st.score.end(), st.score.begin());
  }
  kernels::rms_norm(out.data(), w.norm, d, s.norm_eps, out.data());
  s.rope->apply(out.data() + d - s.rope_dim, pos + 1 - r);
  if (s.rotate) {
    kernels::hadamard(out.data(), d);
    kernels::fake_quant_fp4(out.data(), d, 32);
  } else {
    kernels::fake_quant_fp8(out.data(), d - s.rope_dim, 64);
  }
  // Packed aside first: a value pack refuses leaves the cache as it was.
  std::vector<uint8_t> packed(size_t(st.codec.bytes()));
  st.codec.pack(out.data(), packed.data());
  cache::save_before_append(undo, pos, st.entries);
  std::copy(packed.begin(), packed.end(), st.entries.append());
  return true;
}

}  // namespace strata::dsv4
