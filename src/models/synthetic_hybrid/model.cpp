#include "models/synthetic_hybrid/model.h"

#include <algorithm>
#include <cmath>

#include "cache/draft_slots.h"
#include "core/error.h"
#include "core/numfmt.h"
#include "io/json_file.h"
#include "kernels/rmsnorm.h"
#include "models/layers/causal_conv1d.h"
#include "models/layers/gated_delta_rule.h"
#include "models/layers/gated_rms_norm.h"
#include "models/synthetic_hybrid/tensors.h"

namespace strata::hybrid {

using std::vector;

namespace {

SequenceState& state_of(models::Sequence& s) {
  auto* st = dynamic_cast<SequenceState*>(&s);
  if (!st) throw Error("forward: sequence state does not belong to this model");
  return *st;
}

float silu(float x) { return x / (1.0f + std::exp(-x)); }

// Binds tensors, copying any whose file offset is not aligned for its element type.
struct Binder {
  const SafetensorsCheckpoint& ck;
  std::list<vector<uint8_t>>& realigned;
  const void* get(const std::string& name, size_t align) const {
    TensorRef t = ck.get(name);
    if (reinterpret_cast<uintptr_t>(t.data) % align == 0) return t.data;
    return realigned.emplace_back(t.data, t.data + t.info->nbytes).data();
  }
  const uint16_t* bf16(const std::string& n) const { return static_cast<const uint16_t*>(get(n, 2)); }
  const float* f32(const std::string& n) const { return static_cast<const float*>(get(n, 4)); }
  kernels::LinearWeight linear(const std::string& n) const {
    const TensorInfo* t = ck.find(n);
    return {kernels::WeightFormat::bf16, bf16(n), nullptr, t->shape[0], t->shape[1]};
  }
};

DecoderWeights bind_decoder(const Binder& b, const Config& c, const std::string& p, bool linear) {
  DecoderWeights w;
  w.input_norm = b.bf16(p + "input_layernorm.weight");
  w.post_norm = b.bf16(p + "post_attention_layernorm.weight");
  if (linear) {
    w.in_qkv = b.linear(p + "linear_attn.in_proj_qkv.weight");
    w.in_z = b.linear(p + "linear_attn.in_proj_z.weight");
    w.in_b = b.linear(p + "linear_attn.in_proj_b.weight");
    w.in_a = b.linear(p + "linear_attn.in_proj_a.weight");
    w.out_proj = b.linear(p + "linear_attn.out_proj.weight");
    const uint16_t* conv = b.bf16(p + "linear_attn.conv1d.weight");
    w.conv.resize(size_t(c.conv_dim() * c.linear_conv_kernel_dim));
    for (size_t i = 0; i < w.conv.size(); ++i) w.conv[i] = bf16_to_f32(conv[i]);
    w.a_log = b.f32(p + "linear_attn.A_log");
    w.dt_bias = b.f32(p + "linear_attn.dt_bias");
    w.gated_norm = b.bf16(p + "linear_attn.norm.weight");
  } else {
    w.q = b.linear(p + "self_attn.q_proj.weight");
    w.k = b.linear(p + "self_attn.k_proj.weight");
    w.v = b.linear(p + "self_attn.v_proj.weight");
    w.o = b.linear(p + "self_attn.o_proj.weight");
  }
  w.gate = b.linear(p + "mlp.gate_proj.weight");
  w.up = b.linear(p + "mlp.up_proj.weight");
  w.down = b.linear(p + "mlp.down_proj.weight");
  return w;
}

}  // namespace

std::unique_ptr<Model> Model::load(const std::string& dir) {
  Config c = parse_config(read_json_file(dir + "/config.json"), dir + "/config.json");
  SafetensorsCheckpoint ck = SafetensorsCheckpoint::open_dir(dir);
  const models::CheckReport r = check_checkpoint(c, ck);
  if (!r.ok()) throw Error(dir + ": checkpoint does not match config.json: " + r.summary());
  return std::make_unique<Model>(std::move(c), std::move(ck));
}

Model::Model(Config c, SafetensorsCheckpoint ckpt) : arch_(std::move(c)), ckpt_(std::move(ckpt)) {
  const Config& cfg = config();
  Binder b{ckpt_, realigned_};
  embed_ = b.bf16("model.embed_tokens.weight");
  final_norm_ = b.bf16("model.norm.weight");
  head_ = b.linear("lm_head.weight");
  for (int64_t l = 0; l < cfg.num_hidden_layers; ++l)
    layers_.push_back(bind_decoder(b, cfg, layer_prefix(l), cfg.is_linear(l)));
  has_mtp_ = cfg.num_nextn_predict_layers > 0;
  if (has_mtp_) {
    mtp_fc_ = b.linear("mtp.fc.weight");
    mtp_norm_embed_ = b.bf16("mtp.pre_fc_norm_embedding.weight");
    mtp_norm_hidden_ = b.bf16("mtp.pre_fc_norm_hidden.weight");
    mtp_norm_ = b.bf16("mtp.norm.weight");
    mtp_layer_ = bind_decoder(b, cfg, kMtpLayerPrefix, false);
  }
  rope_ = kernels::RopeTable(cfg.head_dim, cfg.rope_theta, kernels::YarnParams{});
}

std::unique_ptr<models::Sequence> Model::new_sequence(const models::CacheOptions& o) const {
  return std::make_unique<SequenceState>(new_state(config(), o.draft_tokens));
}

void Model::check_ids(const int64_t* ids, int64_t n, int64_t pos0) const {
  if (n < 1) throw Error("forward: no tokens to run");
  for (int64_t i = 0; i < n; ++i)
    if (ids[i] < 0 || ids[i] >= config().vocab_size)
      throw Error("token id " + std::to_string(ids[i]) + " is outside the vocabulary [0, " +
                  std::to_string(config().vocab_size) + ")");
  if (pos0 + n > max_positions())
    throw Error("sequence of " + std::to_string(pos0 + n) + " tokens exceeds max_position_embeddings " +
                std::to_string(max_positions()));
}

void Model::embed(const int64_t* ids, int64_t n, float* h) const {
  const int64_t d = config().hidden_size;
  for (int64_t t = 0; t < n; ++t)
    for (int64_t c = 0; c < d; ++c) h[t * d + c] = bf16_to_f32(embed_[ids[t] * d + c]);
}

void Model::delta_net(const DecoderWeights& w, const std::vector<Segment>& segs, const float* x, int64_t n,
                      float* out) const {
  const Config& c = config();
  const int64_t cd = c.conv_dim(), hk = c.linear_num_key_heads, hv = c.linear_num_value_heads;
  const int64_t dk = c.linear_key_head_dim, dv = c.linear_value_head_dim, K = c.linear_conv_kernel_dim;
  vector<float> mixed(size_t(n * cd)), z(size_t(n * hv * dv)), bb(size_t(n * hv)), aa(size_t(n * hv));
  kernels::linear(w.in_qkv, x, n, mixed.data(), true);
  kernels::linear(w.in_z, x, n, z.data(), true);
  kernels::linear(w.in_b, x, n, bb.data(), true);
  kernels::linear(w.in_a, x, n, aa.data(), true);
  vector<float> y(size_t(n * hv * dv)), conv(static_cast<size_t>(cd)), o(static_cast<size_t>(dv));
  int64_t row = 0;
  for (const Segment& s : segs) {
    LayerState& L = *s.layer;
    for (int64_t t = 0; t < s.rows; ++t, ++row) {
      const auto sp = cache::draft_step<float>(L.state.data(), L.state_drafts.data(), c.state_floats(),
                                               L.draft_copies, t, s.rows, s.pos0, s.undo);
      const auto cp = cache::draft_step<uint16_t>(L.conv.data(), L.conv_drafts.data(), c.conv_tail_values(),
                                                  L.draft_copies, t, s.rows, s.pos0, s.undo);
      models::causal_conv1d_step(cp.in, cp.out, mixed.data() + row * cd, w.conv.data(), cd, K, conv.data());
      float* q = conv.data();
      float* k = conv.data() + hk * dk;
      const float* v = conv.data() + 2 * hk * dk;
      for (int64_t h = 0; h < hk; ++h) models::prepare_delta_qk(q + h * dk, k + h * dk, dk);
      for (int64_t h = 0; h < hv; ++h) {
        const int64_t kh = h / (hv / hk);
        float g, beta;
        models::delta_gates(aa[size_t(row * hv + h)], bb[size_t(row * hv + h)], w.a_log[h], w.dt_bias[h], &g, &beta);
        models::gated_delta_step(sp.in + h * dk * dv, sp.out + h * dk * dv, q + kh * dk, k + kh * dk, v + h * dv, g,
                                 beta, dk, dv, o.data());
        models::gated_rms_norm(o.data(), z.data() + (row * hv + h) * dv, w.gated_norm, dv, float(c.rms_norm_eps),
                               y.data() + (row * hv + h) * dv);
      }
    }
  }
  kernels::linear(w.out_proj, y.data(), n, out, true);
}

void Model::attention(const DecoderWeights& w, const std::vector<Segment>& segs, const float* x, int64_t n,
                      float* out) const {
  const Config& c = config();
  const int64_t H = c.num_attention_heads, KV = c.num_key_value_heads, hd = c.head_dim, group = H / KV;
  vector<float> q(size_t(n * H * hd)), k(size_t(n * KV * hd)), v(size_t(n * KV * hd)), att(size_t(n * H * hd));
  kernels::linear(w.q, x, n, q.data(), true);
  kernels::linear(w.k, x, n, k.data(), true);
  kernels::linear(w.v, x, n, v.data(), true);
  const float scale = 1.0f / std::sqrt(float(hd));
  int64_t row0 = 0;
  for (const Segment& s : segs) {
    LayerState& L = *s.layer;
    // Every row's K/V first (rotated), then each row attends to positions up to its own.
    for (int64_t t = 0; t < s.rows; ++t) {
      const int64_t r = row0 + t, pos = s.pos0 + t;
      for (int64_t h = 0; h < H; ++h) rope_.apply(q.data() + (r * H + h) * hd, pos);
      for (int64_t h = 0; h < KV; ++h) rope_.apply(k.data() + (r * KV + h) * hd, pos);
      cache::save_before_append(s.undo, pos, L.kv);
      auto* e = reinterpret_cast<uint16_t*>(L.kv.append());
      for (int64_t i = 0; i < KV * hd; ++i) {
        e[i] = f32_to_bf16(k[size_t(r * KV * hd + i)]);
        e[KV * hd + i] = f32_to_bf16(v[size_t(r * KV * hd + i)]);
      }
    }
    vector<float> p;
    for (int64_t t = 0; t < s.rows; ++t) {
      const int64_t r = row0 + t, visible = s.pos0 + t + 1;
      p.resize(size_t(visible));
      for (int64_t h = 0; h < H; ++h) {
        const float* qh = q.data() + (r * H + h) * hd;
        const int64_t kvh = h / group;
        float mx = -INFINITY;
        for (int64_t j = 0; j < visible; ++j) {
          const auto* kj = reinterpret_cast<const uint16_t*>(L.kv.entry(j)) + kvh * hd;
          float dot = 0.0f;
          for (int64_t i = 0; i < hd; ++i) dot += qh[i] * bf16_to_f32(kj[i]);
          p[size_t(j)] = dot * scale;
          mx = std::max(mx, p[size_t(j)]);
        }
        float sum = 0.0f;
        for (int64_t j = 0; j < visible; ++j) sum += (p[size_t(j)] = std::exp(p[size_t(j)] - mx));
        float* oh = att.data() + (r * H + h) * hd;
        std::fill(oh, oh + hd, 0.0f);
        for (int64_t j = 0; j < visible; ++j) {
          const auto* vj = reinterpret_cast<const uint16_t*>(L.kv.entry(j)) + KV * hd + kvh * hd;
          const float pj = p[size_t(j)] / sum;
          for (int64_t i = 0; i < hd; ++i) oh[i] += pj * bf16_to_f32(vj[i]);
        }
        for (int64_t i = 0; i < hd; ++i) oh[i] = round_bf16(oh[i]);
      }
    }
    row0 += s.rows;
  }
  kernels::linear(w.o, att.data(), n, out, true);
}

void Model::decoder(const DecoderWeights& w, const std::vector<Segment>& segs, float* h, int64_t n) const {
  const Config& c = config();
  const int64_t d = c.hidden_size, I = c.intermediate_size;
  const float eps = float(c.rms_norm_eps);
  vector<float> x(size_t(n * d)), out(size_t(n * d));
  for (int64_t t = 0; t < n; ++t) kernels::rms_norm(h + t * d, w.input_norm, d, eps, x.data() + t * d);
  if (!w.in_qkv.empty()) delta_net(w, segs, x.data(), n, out.data());
  else attention(w, segs, x.data(), n, out.data());
  for (int64_t i = 0; i < n * d; ++i) h[i] = round_bf16(h[i] + out[size_t(i)]);
  for (int64_t t = 0; t < n; ++t) kernels::rms_norm(h + t * d, w.post_norm, d, eps, x.data() + t * d);
  vector<float> g(size_t(n * I)), u(size_t(n * I));
  kernels::linear(w.gate, x.data(), n, g.data(), true);
  kernels::linear(w.up, x.data(), n, u.data(), true);
  for (int64_t i = 0; i < n * I; ++i) g[size_t(i)] = round_bf16(silu(g[size_t(i)]) * u[size_t(i)]);
  kernels::linear(w.down, g.data(), n, out.data(), true);
  for (int64_t i = 0; i < n * d; ++i) h[i] = round_bf16(h[i] + out[size_t(i)]);
}

void Model::forward_batch(std::vector<BatchItem>& items) const {
  const Config& c = config();
  int64_t n = 0;
  vector<SequenceState*> states;
  for (const auto& it : items) {
    if (!it.state) throw Error("forward: no sequence state");
    SequenceState& st = state_of(*it.state);
    if (st.layers.size() != size_t(c.num_hidden_layers)) throw Error("forward: sequence state does not belong to this model");
    check_ids(it.ids, it.n, st.pos);
    for (const auto* o : states)
      if (o == &st) throw Error("forward_batch: a sequence appears twice in one batch");
    // A speculative pass keeps each drafted token's recurrent state in a draft slot: refused
    // here, before any state is touched, when there are too few.
    if (it.undo)
      for (const auto& L : st.layers)
        if (L.linear && it.n - 1 > L.draft_copies)
          throw Error("a speculative pass of " + std::to_string(it.n) + " tokens needs " + std::to_string(it.n - 1) +
                      " draft slots; the state has " + std::to_string(L.draft_copies));
    states.push_back(&st);
    n += it.n;
  }
  const int64_t d = c.hidden_size, V = c.vocab_size;
  vector<int64_t> ids;
  for (const auto& it : items) ids.insert(ids.end(), it.ids, it.ids + it.n);
  vector<float> h(size_t(n * d));
  embed(ids.data(), n, h.data());
  vector<Segment> segs(items.size());
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    for (size_t i = 0; i < items.size(); ++i)
      segs[i] = {&states[i]->layers[size_t(l)], states[i]->pos, items[i].n, items[i].undo};
    decoder(layers_[size_t(l)], segs, h.data(), n);
  }
  for (int64_t t = 0; t < n; ++t) kernels::rms_norm(h.data() + t * d, final_norm_, d, float(c.rms_norm_eps), h.data() + t * d);
  vector<float> wanted;
  int64_t row = 0, rows = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    auto& it = items[i];
    states[i]->pos += it.n;
    if (it.hidden) it.hidden->assign(h.begin() + row * d, h.begin() + (row + it.n) * d);
    row += it.n;
    if (!it.logits && !it.all_logits) continue;
    const int64_t first = it.all_logits ? row - it.n : row - 1;
    wanted.insert(wanted.end(), h.begin() + first * d, h.begin() + row * d);
    rows += row - first;
  }
  if (!rows) return;
  vector<float> logits(size_t(rows * V));
  kernels::linear(head_, wanted.data(), rows, logits.data(), false);
  int64_t k = 0;
  for (auto& it : items) {
    if (!it.logits && !it.all_logits) continue;
    const int64_t r = it.all_logits ? it.n : 1;
    it.out.assign(logits.begin() + k * V, logits.begin() + (k + r) * V);
    k += r;
  }
}

void Model::mtp_forward_batch(std::vector<MtpItem>& items, int64_t j) const {
  if (j != 0 || !has_mtp_) throw Error("mtp_forward: the checkpoint has no MTP block " + std::to_string(j));
  const Config& c = config();
  const int64_t d = c.hidden_size, V = c.vocab_size;
  const float eps = float(c.rms_norm_eps);
  int64_t n = 0;
  vector<SequenceState*> states;
  for (const auto& it : items) {
    if (!it.state) throw Error("mtp_forward: no sequence state");
    SequenceState& st = state_of(*it.state);
    check_ids(it.next_ids, it.n, st.mtp_pos.at(0));
    for (const auto* o : states)
      if (o == &st) throw Error("mtp_forward: a sequence appears twice in one batch");
    states.push_back(&st);
    n += it.n;
  }
  if (items.empty()) return;
  // x = fc([norm_e(embed(next)), norm_h(hidden)])
  vector<int64_t> ids;
  for (const auto& it : items) ids.insert(ids.end(), it.next_ids, it.next_ids + it.n);
  vector<float> e(size_t(n * d)), cat(size_t(n * 2 * d)), x(size_t(n * d));
  embed(ids.data(), n, e.data());
  int64_t row = 0;
  for (const auto& it : items)
    for (int64_t t = 0; t < it.n; ++t, ++row) {
      kernels::rms_norm(e.data() + row * d, mtp_norm_embed_, d, eps, cat.data() + row * 2 * d);
      kernels::rms_norm(it.hidden + t * d, mtp_norm_hidden_, d, eps, cat.data() + row * 2 * d + d);
    }
  kernels::linear(mtp_fc_, cat.data(), n, x.data(), true);
  vector<Segment> segs;
  for (size_t i = 0; i < items.size(); ++i) segs.push_back({&states[i]->mtp, states[i]->mtp_pos[0], items[i].n, items[i].undo});
  decoder(mtp_layer_, segs, x.data(), n);
  for (int64_t t = 0; t < n; ++t) kernels::rms_norm(x.data() + t * d, mtp_norm_, d, eps, x.data() + t * d);
  vector<float> wanted;
  row = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    auto& it = items[i];
    states[i]->mtp_pos[0] += it.n;
    it.streams.assign(x.begin() + row * d, x.begin() + (row + it.n) * d);
    row += it.n;
    if (it.logits) wanted.insert(wanted.end(), x.begin() + (row - 1) * d, x.begin() + row * d);
  }
  const int64_t rows = int64_t(wanted.size()) / d;
  if (!rows) return;
  vector<float> logits(size_t(rows * V));
  kernels::linear(head_, wanted.data(), rows, logits.data(), false);
  int64_t k = 0;
  for (auto& it : items)
    if (it.logits) it.out.assign(logits.begin() + k * V, logits.begin() + (k + 1) * V), ++k;
}

void Model::restart_mtp(models::Sequence& s, int64_t pos, int64_t j) const {
  if (j != 0 || !has_mtp_) throw Error("restart_mtp: the checkpoint has no MTP block " + std::to_string(j));
  SequenceState& st = state_of(s);
  st.mtp.kv.resize(0);
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
  for (auto& L : st->layers) {
    if (L.linear) {
      for (auto& v : L.state) v = next();
      for (auto& v : L.conv) v = f32_to_bf16(next());
      continue;
    }
    for (int64_t t = 0; t < pos; ++t) {
      auto* e = reinterpret_cast<uint16_t*>(L.kv.append());
      for (int64_t i = 0; i < config().kv_entry_bytes() / 2; ++i) e[i] = f32_to_bf16(next());
    }
  }
  st->pos = pos;
  st->mtp_pos.assign(st->mtp_pos.size(), pos);
  for (int64_t t = 0; t < pos && has_mtp_; ++t) {
    auto* e = reinterpret_cast<uint16_t*>(st->mtp.kv.append());
    for (int64_t i = 0; i < config().kv_entry_bytes() / 2; ++i) e[i] = f32_to_bf16(next());
  }
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

}  // namespace strata::hybrid
