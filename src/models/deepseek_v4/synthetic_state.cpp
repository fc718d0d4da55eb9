#include "models/deepseek_v4/synthetic_state.h"

#include <random>

#include "core/error.h"
#include "core/numfmt.h"

namespace strata::dsv4 {

namespace {
// bf16-valued noise of unit scale (entries are RMS-normalized in the model)
void fill(std::vector<float>& v, std::mt19937_64& rng) {
  std::normal_distribution<float> nd;
  for (auto& x : v) x = round_bf16(nd(rng));
}

void fill_layer(LayerState& L, int64_t pos, std::mt19937_64& rng) {
  fill(L.ring, rng);
  for (CompressorState* c : {&L.compressor, &L.index_keys}) {
    if (c->ratio <= 0) continue;
    c->entries.resize(size_t((pos / c->ratio) * c->head_dim));
    fill(c->entries, rng);
  }
}
}  // namespace

SequenceState synthetic_state(const Model& model, int64_t pos, uint64_t seed) {
  if (pos < 0 || pos % 128 != 0) throw Error("synthetic_state: position " + std::to_string(pos) + " is not a multiple of 128");
  SequenceState st = model.new_sequence();
  std::mt19937_64 rng(seed);
  st.pos = pos;
  for (auto& L : st.layers) fill_layer(L, pos, rng);
  return st;  // the MTP block stays at position 0: plain decoding does not run it
}

}  // namespace strata::dsv4
