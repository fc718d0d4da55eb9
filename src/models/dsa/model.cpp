#include "models/dsa/model.h"

#include <algorithm>
#include <cstdio>

#include "core/error.h"
#include "core/huge_buffer.h"
#include "core/numfmt.h"
#include "io/json_file.h"
#include "kernels/linear.h"
#include "models/batch_rows.h"
#include "models/dsa/cache_entries.h"
#include "models/dsa/lightning_indexer.h"
#include "models/dsa/mla.h"
#include "models/dsa/moe.h"
#include "models/dsa/tensors.h"

namespace strata::dsa {

using std::vector;

namespace {

SequenceState& state_of(models::Sequence& s) {
  auto* st = dynamic_cast<SequenceState*>(&s);
  if (!st) throw Error("forward: sequence state does not belong to this model");
  return *st;
}

kernels::YarnParams yarn_of(const Config& c) {
  kernels::YarnParams y;
  if (!c.yarn.on) return y;
  y.factor = c.yarn.factor;
  y.original_max_position = c.yarn.original_max_position_embeddings;
  y.beta_fast = c.yarn.beta_fast;
  y.beta_slow = c.yarn.beta_slow;
  return y;
}

}  // namespace

std::unique_ptr<Model> Model::load(const std::string& dir) {
  Config c = parse_config(read_json_file(dir + "/config.json"), dir + "/config.json");
  SafetensorsCheckpoint ck = SafetensorsCheckpoint::open_dir(dir);
  const models::CheckReport r = check_checkpoint(c, ck);
  if (!r.ok()) throw Error(dir + ": checkpoint does not match config.json: " + r.summary());
  const bool mtp = c.num_nextn_predict_layers > 0 && has_mtp_tensors(c, ck);
  if (c.num_nextn_predict_layers > 0 && !mtp) {
    std::fprintf(stderr, "note: %s: no MTP layer tensors; speculative decoding is unavailable (plain decoding works)\n",
                 dir.c_str());
    c.num_nextn_predict_layers = 0;
  }
  return std::make_unique<Model>(std::move(c), std::move(ck), mtp);
}

Model::Model(Config c, SafetensorsCheckpoint ckpt, bool with_mtp) : arch_(std::move(c)), ckpt_(std::move(ckpt)) {
  bind_weights(config(), ckpt_, with_mtp, w_);
  rope_ = kernels::RopeTable(config().qk_rope_head_dim, config().rope_theta, yarn_of(config()));
}

std::unique_ptr<models::Sequence> Model::new_sequence(const models::CacheOptions& o) const {
  if (o.fp4_index_keys) throw Error("FP4 index keys are a DeepSeek-V4 option; the DSA models store FP8 index keys");
  return std::make_unique<SequenceState>(new_state(config()));
}

void Model::embed(const uint16_t* table, const int64_t* ids, int64_t n, float* h) const {
  const int64_t d = config().hidden_size;
  for (int64_t t = 0; t < n; ++t)
    for (int64_t c = 0; c < d; ++c) h[t * d + c] = bf16_to_f32(table[ids[t] * d + c]);
}

vector<float> Model::head(const LinearWeight& w, const float* rows, int64_t n) const {
  vector<float> logits(static_cast<size_t>(n * config().vocab_size));
  kernels::linear(w, rows, n, logits.data(), false);  // the reference's head is an fp32 linear
  return logits;
}

void Model::decoder(const DecoderWeights& w, const vector<Segment>& segs, float* h, int64_t n,
                    vector<vector<int32_t>>& selection) const {
  const Config& c = config();
  const int64_t d = c.hidden_size;
  const float eps = float(c.rms_norm_eps);
  CallBuffer<float> x(static_cast<size_t>(n * d)), out(static_cast<size_t>(n * d));
  for (int64_t t = 0; t < n; ++t) rms_norm(h + t * d, w.input_norm.data(), d, eps, x.data() + t * d);
  mla_forward(c, w.attn, rope_, segs, x.data(), n, selection, out.data());
  for (int64_t i = 0; i < n * d; ++i) h[i] = round_bf16(h[i] + out[size_t(i)]);
  for (int64_t t = 0; t < n; ++t) rms_norm(h + t * d, w.post_norm.data(), d, eps, x.data() + t * d);
  if (w.dense) swiglu_mlp(w.mlp, x.data(), n, out.data());
  else moe_forward(c, w.moe, x.data(), n, out.data());
  for (int64_t i = 0; i < n * d; ++i) h[i] = round_bf16(h[i] + out[size_t(i)]);
}

void Model::forward_batch(vector<BatchItem>& items) const {
  const Config& c = config();
  const vector<SequenceState*> states = batch_states<SequenceState>(items, size_t(c.num_hidden_layers));
  int64_t n = 0;
  for (const auto& it : items) n += it.n;
  if (items.empty()) return;
  const int64_t d = c.hidden_size, V = c.vocab_size;
  vector<int64_t> ids;
  for (const auto& it : items) ids.insert(ids.end(), it.ids, it.ids + it.n);
  vector<float> h(static_cast<size_t>(n * d));
  embed(w_.embed, ids.data(), n, h.data());
  vector<Segment> segs(items.size());
  vector<vector<int32_t>> selection;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    for (size_t i = 0; i < items.size(); ++i) segs[i] = {&states[i]->layers[size_t(l)], states[i]->pos, items[i].n, items[i].undo};
    decoder(w_.layers[size_t(l)], segs, h.data(), n, selection);
  }
  for (int64_t t = 0; t < n; ++t) rms_norm(h.data() + t * d, w_.norm.data(), d, float(c.rms_norm_eps), h.data() + t * d);
  const vector<float> wanted = models::finish_rows(items, h, d);
  if (wanted.empty()) return;
  models::hand_out_logits(items, head(w_.head, wanted.data(), int64_t(wanted.size()) / d), V);
}

void Model::mtp_forward_batch(vector<MtpItem>& items, int64_t j) const {
  if (j != 0 || !w_.has_mtp) throw Error("mtp_forward: the checkpoint has no MTP layer " + std::to_string(j));
  const Config& c = config();
  const int64_t d = c.hidden_size, V = c.vocab_size;
  const float eps = float(c.rms_norm_eps);
  int64_t n = 0;
  vector<SequenceState*> states;
  for (const auto& it : items) {
    if (!it.state) throw Error("mtp_forward: no sequence state");
    SequenceState& st = state_of(*it.state);
    if (st.mtp.empty()) throw Error("mtp_forward: sequence state does not belong to this model");
    check_ids(it.next_ids, it.n, st.mtp_pos[0]);
    for (const auto* o : states)
      if (o == &st) throw Error("mtp_forward: a sequence appears twice in one batch");
    states.push_back(&st);
    n += it.n;
  }
  if (items.empty()) return;
  const MtpWeights& m = w_.mtp;
  vector<int64_t> ids;
  for (const auto& it : items) ids.insert(ids.end(), it.next_ids, it.next_ids + it.n);
  vector<float> e(static_cast<size_t>(n * d)), cat(static_cast<size_t>(n * 2 * d)), x(static_cast<size_t>(n * d));
  embed(m.embed, ids.data(), n, e.data());
  int64_t row = 0;
  for (const auto& it : items)
    for (int64_t t = 0; t < it.n; ++t, ++row) {
      rms_norm(e.data() + row * d, m.enorm.data(), d, eps, cat.data() + row * 2 * d);
      rms_norm(it.hidden + t * d, m.hnorm.data(), d, eps, cat.data() + row * 2 * d + d);
    }
  kernels::linear(m.eh_proj, cat.data(), n, x.data(), true);
  vector<Segment> segs;
  for (size_t i = 0; i < items.size(); ++i) segs.push_back({&states[i]->mtp[0], states[i]->mtp_pos[0], items[i].n, items[i].undo});
  vector<vector<int32_t>> selection;
  decoder(m.layer, segs, x.data(), n, selection);
  for (int64_t t = 0; t < n; ++t) rms_norm(x.data() + t * d, m.final_norm.data(), d, eps, x.data() + t * d);
  const vector<float> wanted = models::finish_mtp_rows(items, x, d, 0);
  if (wanted.empty()) return;
  models::hand_out_mtp_logits(items, head(m.head, wanted.data(), int64_t(wanted.size()) / d), V);
}

void Model::restart_mtp(models::Sequence& s, int64_t pos, int64_t j) const {
  if (j != 0 || !w_.has_mtp) throw Error("restart_mtp: the checkpoint has no MTP layer " + std::to_string(j));
  SequenceState& st = state_of(s);
  if (pos < 0 || pos > st.pos) throw Error("restart_mtp: position " + std::to_string(pos) + " is not within the sequence");
  // Filler entries for [0, pos), which no query reads (LayerState::fillers): the layer attends
  // only to what it runs from pos on, and keeps one entry per token as the pool counts them.
  LayerState& L = st.mtp[0];
  L.latent.resize(0);
  L.index_keys.resize(0);
  for (int64_t t = 0; t < pos; ++t) {
    std::fill_n(L.latent.append(), L.latent.entry_bytes(), uint8_t(0));
    if (L.has_index_keys) std::fill_n(L.index_keys.append(), L.index_keys.entry_bytes(), uint8_t(0));
  }
  st.mtp_pos[0] = pos;
}

std::unique_ptr<models::Sequence> Model::synthetic_sequence(int64_t pos, uint64_t seed,
                                                            const models::CacheOptions& o) const {
  if (pos < 0 || pos > max_positions()) throw Error("synthetic state: position outside the context");
  auto st = std::make_unique<SequenceState>(new_state(config()));
  if (o.fp4_index_keys) throw Error("FP4 index keys are a DeepSeek-V4 option; the DSA models store FP8 index keys");
  const Config& c = config();
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  auto next = [&] {  // xorshift64*: values in [-0.5, 0.5)
    x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
    return float(double((x * 0x2545f4914f6cdd1dull) >> 11) * 0x1.0p-53 - 0.5);
  };
  vector<float> lat(static_cast<size_t>(c.kv_lora_rank)), pe(static_cast<size_t>(c.qk_rope_head_dim)), key(static_cast<size_t>(c.index_head_dim));
  auto fill = [&](LayerState& L) {
    for (int64_t t = 0; t < pos; ++t) {
      for (auto& v : lat) v = round_bf16(next());
      for (auto& v : pe) v = round_bf16(next());
      encode_latent(lat.data(), c.kv_lora_rank, pe.data(), c.qk_rope_head_dim, L.latent.append());
      if (!L.has_index_keys) continue;
      for (auto& v : key) v = round_bf16(next());
      index_key_entry(key.data(), c.index_head_dim, L.index_keys.append());
    }
  };
  for (auto& L : st->layers) fill(L);
  for (auto& m : st->mtp) fill(m);
  st->pos = pos;
  st->mtp_pos.assign(st->mtp_pos.size(), pos);
  return st;
}

std::string Model::describe_state(const models::Sequence& s) const {
  const SequenceState& st = state_of(const_cast<models::Sequence&>(s));
  std::string out = "after " + std::to_string(st.pos) + " tokens:\n";
  for (size_t l = 0; l < st.layers.size(); ++l) {
    const auto& L = st.layers[l];
    out += "  layer " + std::to_string(l) + ": " + std::to_string(L.latent.size()) + " latent entries (" +
           std::to_string(L.latent.bytes()) + " B)" +
           (L.has_index_keys ? ", " + std::to_string(L.index_keys.size()) + " index keys (" +
                                   std::to_string(L.index_keys.bytes()) + " B)"
                             : ", the previous full layer's selection") +
           "\n";
  }
  return out;
}

}  // namespace strata::dsa
