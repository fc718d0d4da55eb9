#include "models/qwen3_5/model.h"

#include <cstdio>

#include "core/error.h"
#include "core/huge_buffer.h"
#include "core/numfmt.h"
#include "io/json_file.h"
#include "models/batch_rows.h"
#include "models/layers/offset_rms_norm.h"
#include "models/qwen3_5/feed_forward.h"
#include "models/qwen3_5/gated_attention.h"
#include "models/qwen3_5/gated_delta_net.h"
#include "models/qwen3_5/tensors.h"

namespace strata::qwen35 {

using std::vector;

namespace {

SequenceState& state_of(models::Sequence& s) {
  auto* st = dynamic_cast<SequenceState*>(&s);
  if (!st) throw Error("forward: sequence state does not belong to this model");
  return *st;
}

}  // namespace

std::unique_ptr<Model> Model::load(const std::string& dir) {
  Config c = parse_config(read_json_file(dir + "/config.json"), dir + "/config.json");
  SafetensorsCheckpoint ck = SafetensorsCheckpoint::open_dir(dir);
  const models::CheckReport r = check_checkpoint(c, ck);
  if (!r.ok()) throw Error(dir + ": checkpoint does not match config.json: " + r.summary());
  if (c.mtp_num_hidden_layers > 0 && !has_mtp_tensors(ck)) {
    std::fprintf(stderr, "note: %s: no mtp.* tensors; speculative decoding is unavailable (plain decoding works)\n",
                 dir.c_str());
    c.mtp_num_hidden_layers = 0;
  }
  if (const int64_t v = vision_tensors(ck); v > 0)
    std::fprintf(stderr, "note: %s: the vision tower's %lld tensors are skipped (text only)\n", dir.c_str(), (long long)v);
  return std::make_unique<Model>(std::move(c), std::move(ck));
}

Model::Model(Config c, SafetensorsCheckpoint ckpt) : arch_(std::move(c)), ckpt_(std::move(ckpt)) {
  bind_weights(config(), ckpt_, w_);
  rope_ = models::RotateHalfRope(config().rotary_dim(), config().rope_theta);
}

std::unique_ptr<models::Sequence> Model::new_sequence(const models::CacheOptions& o) const {
  return std::make_unique<SequenceState>(new_state(config(), o.draft_tokens));
}

void Model::embed(const int64_t* ids, int64_t n, float* h) const {
  const int64_t d = config().hidden_size;
  for (int64_t t = 0; t < n; ++t)
    for (int64_t c = 0; c < d; ++c) h[t * d + c] = bf16_to_f32(w_.embed[ids[t] * d + c]);
}

vector<float> Model::head(const float* rows, int64_t n) const {
  vector<float> logits(size_t(n * config().vocab_size));
  kernels::linear(w_.head, rows, n, logits.data(), true);  // the head's output is a bf16 tensor
  return logits;
}

void Model::decoder(const DecoderWeights& w, const vector<Segment>& segs, float* h, int64_t n) const {
  const Config& c = config();
  const int64_t d = c.hidden_size;
  const float eps = float(c.rms_norm_eps);
  CallBuffer<float> x(size_t(n * d)), out(size_t(n * d));
  for (int64_t t = 0; t < n; ++t) models::offset_rms_norm(h + t * d, w.input_norm, d, eps, x.data() + t * d);
  if (w.linear) gated_delta_net(c, w.gdn, segs, x.data(), n, out.data());
  else gated_attention(c, w.attn, rope_, segs, x.data(), n, out.data());
  for (int64_t i = 0; i < n * d; ++i) h[i] = round_bf16(h[i] + out[size_t(i)]);
  for (int64_t t = 0; t < n; ++t) models::offset_rms_norm(h + t * d, w.post_norm, d, eps, x.data() + t * d);
  if (c.moe()) moe_mlp(c, w.moe, x.data(), n, out.data());
  else swiglu_mlp(w.mlp, x.data(), n, out.data());
  for (int64_t i = 0; i < n * d; ++i) h[i] = round_bf16(h[i] + out[size_t(i)]);
}

void Model::forward_batch(vector<BatchItem>& items) const {
  const Config& c = config();
  const vector<SequenceState*> states = batch_states<SequenceState>(items, size_t(c.num_hidden_layers));
  int64_t n = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    const auto& it = items[i];
    // Each drafted token's recurrent state goes to a draft slot: refused before any state is
    // touched when there are too few.
    if (it.undo)
      for (const auto& L : states[i]->layers)
        if (L.linear && it.n - 1 > L.draft_copies)
          throw Error("a speculative pass of " + std::to_string(it.n) + " tokens needs " + std::to_string(it.n - 1) +
                      " draft slots; the state has " + std::to_string(L.draft_copies));
    n += it.n;
  }
  const int64_t d = c.hidden_size, V = c.vocab_size;
  vector<int64_t> ids;
  for (const auto& it : items) ids.insert(ids.end(), it.ids, it.ids + it.n);
  vector<float> h(size_t(n * d));
  embed(ids.data(), n, h.data());
  vector<Segment> segs(items.size());
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    for (size_t i = 0; i < items.size(); ++i) segs[i] = {&states[i]->layers[size_t(l)], states[i]->pos, items[i].n, items[i].undo};
    decoder(w_.layers[size_t(l)], segs, h.data(), n);
  }
  for (int64_t t = 0; t < n; ++t) models::offset_rms_norm(h.data() + t * d, w_.norm, d, float(c.rms_norm_eps), h.data() + t * d);
  // The head over every wanted row at once (the largest matrix: read once per batch).
  const vector<float> wanted = models::finish_rows(items, h, d);
  if (wanted.empty()) return;
  models::hand_out_logits(items, head(wanted.data(), int64_t(wanted.size()) / d), V);
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
  // x = bf16(fc([norm_e(embed(next)), norm_h(hidden)])), hidden the target's final-norm output.
  vector<int64_t> ids;
  for (const auto& it : items) ids.insert(ids.end(), it.next_ids, it.next_ids + it.n);
  vector<float> e(size_t(n * d)), cat(size_t(n * 2 * d)), x(size_t(n * d));
  embed(ids.data(), n, e.data());
  int64_t row = 0;
  for (const auto& it : items)
    for (int64_t t = 0; t < it.n; ++t, ++row) {
      models::offset_rms_norm(e.data() + row * d, w_.mtp_norm_embedding, d, eps, cat.data() + row * 2 * d);
      models::offset_rms_norm(it.hidden + t * d, w_.mtp_norm_hidden, d, eps, cat.data() + row * 2 * d + d);
    }
  kernels::linear(w_.mtp_fc, cat.data(), n, x.data(), true);
  vector<Segment> segs;
  for (size_t i = 0; i < items.size(); ++i) segs.push_back({&states[i]->mtp[0], states[i]->mtp_pos[0], items[i].n, items[i].undo});
  decoder(w_.mtp_layer, segs, x.data(), n);
  for (int64_t t = 0; t < n; ++t) models::offset_rms_norm(x.data() + t * d, w_.mtp_norm, d, eps, x.data() + t * d);
  const vector<float> wanted = models::finish_mtp_rows(items, x, d, 0);
  if (wanted.empty()) return;
  models::hand_out_mtp_logits(items, head(wanted.data(), int64_t(wanted.size()) / d), V);
}

void Model::restart_mtp(models::Sequence& s, int64_t pos, int64_t j) const {
  if (j != 0 || !w_.has_mtp) throw Error("restart_mtp: the checkpoint has no MTP layer " + std::to_string(j));
  SequenceState& st = state_of(s);
  st.mtp[0].kv.resize(0);
  st.mtp_pos[0] = pos;
}

std::unique_ptr<models::Sequence> Model::synthetic_sequence(int64_t pos, uint64_t seed,
                                                            const models::CacheOptions& o) const {
  if (pos < 0 || pos > max_positions()) throw Error("synthetic state: position outside the context");
  auto st = std::make_unique<SequenceState>(new_state(config(), o.draft_tokens));
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  auto next = [&] {  // xorshift64*: values in [-0.5, 0.5)
    x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
    return float(double((x * 0x2545f4914f6cdd1dull) >> 11) * 0x1.0p-53 - 0.5);
  };
  const int64_t values = config().kv_entry_bytes() / 2;
  auto fill_kv = [&](cache::EntryArray& kv) {
    for (int64_t t = 0; t < pos; ++t) {
      auto* e = reinterpret_cast<uint16_t*>(kv.append());
      for (int64_t i = 0; i < values; ++i) e[i] = f32_to_bf16(next());
    }
  };
  for (auto& L : st->layers) {
    if (!L.linear) {
      fill_kv(L.kv);
      continue;
    }
    for (auto& v : L.state) v = next();
    for (auto& v : L.conv) v = f32_to_bf16(next());
  }
  for (auto& m : st->mtp) fill_kv(m.kv);
  st->pos = pos;
  st->mtp_pos.assign(st->mtp_pos.size(), pos);
  return st;
}

std::string Model::describe_state(const models::Sequence& s) const {
  const SequenceState& st = state_of(const_cast<models::Sequence&>(s));
  std::string out = "after " + std::to_string(st.pos) + " tokens:\n";
  for (size_t l = 0; l < st.layers.size(); ++l) {
    const auto& L = st.layers[l];
    out += "  layer " + std::to_string(l) +
           (L.linear ? " delta net: state " + std::to_string(L.state.size() * 4) + " B + conv tail " +
                           std::to_string(L.conv.size() * 2) + " B"
                     : " attention: " + std::to_string(L.kv.size()) + " K/V entries") +
           "\n";
  }
  return out;
}

}  // namespace strata::qwen35
