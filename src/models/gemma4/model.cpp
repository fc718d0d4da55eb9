#include "models/gemma4/model.h"

#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "core/huge_buffer.h"
#include "core/numfmt.h"
#include "io/json_file.h"
#include "kernels/rmsnorm.h"
#include "models/batch_rows.h"
#include "models/gemma4/attention.h"
#include "models/gemma4/feed_forward.h"
#include "models/gemma4/moe.h"
#include "models/gemma4/per_layer_input.h"
#include "models/gemma4/tensors.h"

namespace strata::gemma4 {

using std::vector;

namespace {

SequenceState& state_of(models::Sequence& s) {
  auto* st = dynamic_cast<SequenceState*>(&s);
  if (!st) throw Error("forward: sequence state does not belong to this model");
  return *st;
}

void norm_rows(const float* x, const uint16_t* w, int64_t n, int64_t d, float eps, float* y) {
  for (int64_t t = 0; t < n; ++t) kernels::rms_norm(x + t * d, w, d, eps, y + t * d);
}

}  // namespace

std::unique_ptr<Model> Model::load(const std::string& dir) {
  Config c = parse_config(read_json_file(dir + "/config.json"), dir + "/config.json");
  SafetensorsCheckpoint ck = SafetensorsCheckpoint::open_dir(dir);
  const models::CheckReport r = check_checkpoint(c, ck);
  if (!r.ok()) throw Error(dir + ": checkpoint does not match config.json: " + r.summary());
  if (const int64_t v = tower_tensors(ck); v > 0)
    std::fprintf(stderr, "note: %s: the vision/audio towers' %lld tensors are skipped (text only)\n", dir.c_str(),
                 (long long)v);
  return std::make_unique<Model>(std::move(c), std::move(ck));
}

Model::Model(Config c, SafetensorsCheckpoint ckpt) : arch_(std::move(c)), ckpt_(std::move(ckpt)) {
  const Config& cf = config();
  bind_weights(cf, ckpt_, w_);
  sliding_rope_ = models::RotateHalfRope(cf.head_dim, cf.sliding_rope_theta);
  if (cf.final_logit_softcapping > 0) softcap_ = models::LogitSoftcap(float(cf.final_logit_softcapping));
  const int64_t D = cf.global_head_dim;
  full_rope_ = cf.full_rope_type == "proportional"
                   ? models::RotateHalfRope(D, cf.full_rope_theta,
                                            int64_t(std::floor(cf.full_partial_rotary_factor * double(D) / 2)))
                   : models::RotateHalfRope(D, cf.full_rope_theta);
  full_table_ = models::RopeTable(full_rope_, cf.max_position_embeddings);
}

std::unique_ptr<models::Sequence> Model::new_sequence(const models::CacheOptions&) const {
  return std::make_unique<SequenceState>(new_state(config()));
}

vector<float> Model::head(const float* rows, int64_t n) const {
  const int64_t V = config().vocab_size;
  vector<float> logits(size_t(n * V));
  kernels::linear(w_.head, rows, n, logits.data(), true);  // the head's output is a bf16 tensor
  if (config().final_logit_softcapping > 0) softcap_.apply(logits.data(), n * V);
  return logits;
}

void Model::forward_batch(vector<BatchItem>& items) const {
  const Config& c = config();
  const vector<SequenceState*> states = batch_states<SequenceState>(items, size_t(c.num_hidden_layers));
  int64_t n = 0;
  for (const auto& it : items) n += it.n;
  const int64_t d = c.hidden_size, V = c.vocab_size;
  const float eps = float(c.rms_norm_eps);
  vector<int64_t> ids;
  for (const auto& it : items) ids.insert(ids.end(), it.ids, it.ids + it.n);
  vector<float> h(size_t(n * d));
  const float scale = round_bf16(float(std::sqrt(double(d))));
  for (int64_t t = 0; t < n; ++t)
    for (int64_t i = 0; i < d; ++i) h[size_t(t * d + i)] = round_bf16(bf16_to_f32(w_.embed[ids[size_t(t)] * d + i]) * scale);
  const vector<float> ple = c.ple() ? per_layer_inputs(c, w_, ids.data(), h.data(), n) : vector<float>{};
  CallBuffer<float> x(size_t(n * d)), y(size_t(n * d));
  vector<Segment> segs(items.size());
  vector<vector<KvView>> views(size_t(c.num_hidden_layers));
  vector<bool> is_source(size_t(c.num_hidden_layers), false);
  for (int64_t l = 0; l < c.num_hidden_layers; ++l)
    if (c.kv_shared(l)) is_source[size_t(c.kv_source(l))] = true;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const DecoderWeights& w = w_.layers[size_t(l)];
    const int64_t own = c.kv_shared(l) ? c.kv_source(l) : l;
    for (size_t i = 0; i < items.size(); ++i) segs[i] = {&states[i]->layers[size_t(own)], states[i]->pos, items[i].n, items[i].undo};
    norm_rows(h.data(), w.input_norm, n, d, eps, x.data());
    attention(c, l, w.attn, c.sliding(l) ? sliding_rope_ : full_rope_, full_table_, segs, x.data(), n, y.data(),
              views[size_t(own)]);
    norm_rows(y.data(), w.post_attention_norm, n, d, eps, y.data());
    for (int64_t i = 0; i < n * d; ++i) h[size_t(i)] = round_bf16(h[size_t(i)] + y[size_t(i)]);
    norm_rows(h.data(), w.pre_feedforward_norm, n, d, eps, x.data());
    geglu_mlp(w.mlp, x.data(), n, y.data());
    if (c.enable_moe_block) {
      CallBuffer<float> m2(size_t(n * d));
      norm_rows(y.data(), w.moe.post_norm_dense, n, d, eps, y.data());
      moe_experts(c, w.moe, h.data(), n, m2.data());
      norm_rows(m2.data(), w.moe.post_norm_experts, n, d, eps, m2.data());
      for (int64_t i = 0; i < n * d; ++i) y[size_t(i)] = round_bf16(y[size_t(i)] + m2[size_t(i)]);
    }
    norm_rows(y.data(), w.post_feedforward_norm, n, d, eps, y.data());
    for (int64_t i = 0; i < n * d; ++i) h[size_t(i)] = round_bf16(h[size_t(i)] + y[size_t(i)]);
    if (c.ple()) per_layer_block(c, w.ple, ple.data(), l, h.data(), n);
    for (int64_t i = 0; i < n * d; ++i) h[size_t(i)] = round_bf16(h[size_t(i)] * w.layer_scalar);
    // A layer's views live until the last layer reading them has run.
    if (!c.kv_shared(l) && !is_source[size_t(l)]) views[size_t(l)].clear();
  }
  norm_rows(h.data(), w_.norm, n, d, eps, h.data());
  const vector<float> wanted = models::finish_rows(items, h, d);
  if (wanted.empty()) return;
  models::hand_out_logits(items, head(wanted.data(), int64_t(wanted.size()) / d), V);
}

std::unique_ptr<models::Sequence> Model::synthetic_sequence(int64_t pos, uint64_t seed,
                                                            const models::CacheOptions&) const {
  if (pos < 0 || pos > max_positions()) throw Error("synthetic state: position outside the context");
  auto st = std::make_unique<SequenceState>(new_state(config()));
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  auto next = [&] {  // xorshift64*: values in [-0.5, 0.5)
    x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
    return float(double((x * 0x2545f4914f6cdd1dull) >> 11) * 0x1.0p-53 - 0.5);
  };
  for (auto& L : st->layers) {
    if (L.kind == LayerState::Kind::sliding) {
      for (auto& v : L.ring) v = f32_to_bf16(next());
    } else if (L.kind == LayerState::Kind::full) {
      for (int64_t t = 0; t < pos; ++t) {
        auto* e = reinterpret_cast<uint16_t*>(L.kv.append());
        for (int64_t i = 0; i < L.entry_values; ++i) e[i] = f32_to_bf16(next());
      }
    }
  }
  st->pos = pos;
  return st;
}

std::string Model::describe_state(const models::Sequence& s) const {
  const SequenceState& st = state_of(const_cast<models::Sequence&>(s));
  std::string out = "after " + std::to_string(st.pos) + " tokens:\n";
  for (size_t l = 0; l < st.layers.size(); ++l) {
    const auto& L = st.layers[l];
    out += "  layer " + std::to_string(l);
    if (L.kind == LayerState::Kind::sliding)
      out += " sliding: ring of " + std::to_string(L.window) + " (" + std::to_string(std::min(st.pos, L.window)) +
             " filled)\n";
    else if (L.kind == LayerState::Kind::full)
      out += " full: " + std::to_string(L.kv.size()) + " entries\n";
    else
      out += " shared: reads layer " + std::to_string(config().kv_source(int64_t(l))) + "'s K/V\n";
  }
  return out;
}

}  // namespace strata::gemma4
