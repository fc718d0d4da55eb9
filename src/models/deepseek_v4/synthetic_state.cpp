#include "models/deepseek_v4/synthetic_state.h"

#include <random>

#include "core/error.h"
#include "core/numfmt.h"
#include "kernels/quant.h"

namespace strata::dsv4 {

namespace {
// n entries of bf16-valued noise of unit scale (entries are RMS-normalized in the model),
// fake-quantized as the model stores them (FP8 NoPE dims of kv entries, FP4 index keys), packed.
template <class Put>
void fill(const EntryCodec& codec, int64_t n, std::mt19937_64& rng, Put put) {
  std::normal_distribution<float> nd;
  std::vector<float> x(size_t(codec.head_dim));
  for (int64_t e = 0; e < n; ++e) {
    for (auto& v : x) v = round_bf16(nd(rng));
    if (codec.kind == EntryCodec::Kind::kv)
      kernels::fake_quant_fp8(x.data(), codec.head_dim - codec.rope_dim, 64);
    else
      kernels::fake_quant_fp4(x.data(), codec.head_dim, 32);
    codec.pack(x.data(), put(e));
  }
}

void fill_layer(LayerState& L, int64_t pos, std::mt19937_64& rng) {
  fill(L.codec, L.window, rng, [&](int64_t e) { return L.ring.data() + e * L.codec.bytes(); });
  for (CompressorState* c : {&L.compressor, &L.index_keys})
    if (c->ratio > 0) fill(c->codec, pos / c->ratio, rng, [&](int64_t) { return c->entries.append(); });
}
}  // namespace

SequenceState synthetic_state(const Model& model, int64_t pos, uint64_t seed, IndexKeyFormat index_keys) {
  if (pos < 0 || pos % 128 != 0) throw Error("synthetic_state: position " + std::to_string(pos) + " is not a multiple of 128");
  SequenceState st = model.new_state(index_keys);
  std::mt19937_64 rng(seed);
  st.pos = pos;
  for (auto& L : st.layers) fill_layer(L, pos, rng);
  return st;  // the MTP block stays at position 0: plain decoding does not run it
}

}  // namespace strata::dsv4
