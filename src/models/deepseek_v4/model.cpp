#include "models/deepseek_v4/model.h"

#include <algorithm>
#include <cstdlib>

#include "core/error.h"
#include "core/huge_buffer.h"
#include "core/numfmt.h"
#include "kernels/rmsnorm.h"
#include "models/deepseek_v4/indexer_scratch.h"
#include "models/deepseek_v4/synthetic_state.h"
#include "models/deepseek_v4/tensors.h"
#include "models/expert_parallel.h"
#include "dist/world.h"

namespace strata::dsv4 {

using std::vector;

std::unique_ptr<Model> Model::load(const std::string& dir) {
  Config c = load_config(dir);
  SafetensorsCheckpoint ck = SafetensorsCheckpoint::open_dir(dir);
  require_valid_checkpoint(c, ck, dir);
  return std::make_unique<Model>(std::move(c), std::move(ck));
}

bool Model::holds_tensor(const std::string& name) const {
  const auto e = models::routed_expert_of(name, ".ffn.experts.");
  if (!e || *e >= cfg_.n_routed_experts) return true;
  // "layers.L.…" or "mtp.J.…": the block whose placement applies
  const MoeWeights* ffn = nullptr;
  for (const char* prefix : {"layers.", "mtp."}) {
    const std::string pre = prefix;
    if (name.compare(0, pre.size(), pre) != 0) continue;
    const int64_t i = std::atoll(name.c_str() + pre.size());
    if (pre == "layers." && i >= 0 && i < int64_t(w_.layers.size())) ffn = &w_.layers[size_t(i)].ffn;
    if (pre == "mtp." && i >= 0 && i < int64_t(w_.mtp.size())) ffn = &w_.mtp[size_t(i)].block.ffn;
  }
  if (!ffn || models::all_local(ffn->placement)) return true;
  const auto& h = ffn->placement.holders[size_t(*e)];
  return std::find(h.begin(), h.end(), dist::rank()) != h.end();
}

void Model::place_experts(int64_t layer, const models::ExpertPlacement& p) {
  if (layer < 0 || layer >= int64_t(w_.layers.size())) throw Error("place_experts: no layer " + std::to_string(layer));
  if (p.experts != cfg_.n_routed_experts || int64_t(p.holders.size()) != p.experts || p.ranks != dist::size())
    throw Error("place_experts: a placement of " + std::to_string(p.experts) + " experts over " + std::to_string(p.ranks) +
                " ranks for " + std::to_string(cfg_.n_routed_experts) + " experts over " + std::to_string(dist::size()));
  for (const auto& h : p.holders)
    if (h.empty()) throw Error("place_experts: an expert without a rank");
  w_.layers[size_t(layer)].ffn.placement = p;
}

SequenceState& state_of(models::Sequence& s) {
  auto* st = dynamic_cast<SequenceState*>(&s);
  if (!st) throw Error("forward: sequence state does not belong to this model");
  return *st;
}

const SequenceState& state_of(const models::Sequence& s) { return state_of(const_cast<models::Sequence&>(s)); }

Model::Model(Config c, SafetensorsCheckpoint ckpt) : arch_(std::move(c)), ckpt_(std::move(ckpt)), cfg_(arch_.config()) {
  w_ = bind_weights(cfg_, ckpt_);
  for (auto& lw : w_.layers) lw.ffn.placement = models::placement_at_load(cfg_.n_routed_experts);
  for (auto& m : w_.mtp) m.block.ffn.placement = models::placement_at_load(cfg_.n_routed_experts);
  const auto& y = cfg_.rope_scaling;
  rope_window_ = kernels::RopeTable(cfg_.qk_rope_head_dim, cfg_.rope_theta, kernels::YarnParams{});
  kernels::YarnParams yp{y.factor, y.factor > 1.0 ? y.original_max_position_embeddings : 0, y.beta_fast, y.beta_slow};
  rope_compressed_ = kernels::RopeTable(cfg_.qk_rope_head_dim, cfg_.compress_rope_theta > 0 ? cfg_.compress_rope_theta : cfg_.rope_theta, yp);
  hc_ = HcSpec{cfg_.hc_mult, cfg_.hidden_size, cfg_.hc_sinkhorn_iters, float(cfg_.hc_eps), float(cfg_.rms_norm_eps)};
  const float eps = float(cfg_.rms_norm_eps);
  for (int64_t L = 0; L < cfg_.num_hidden_layers + int64_t(w_.mtp.size()); ++L) {
    AttentionSpec a;
    a.dim = cfg_.hidden_size;
    a.heads = cfg_.num_attention_heads;
    a.head_dim = cfg_.head_dim;
    a.rope_dim = cfg_.qk_rope_head_dim;
    a.q_lora_rank = cfg_.q_lora_rank;
    a.groups = cfg_.o_groups;
    a.o_lora_rank = cfg_.o_lora_rank;
    a.window = cfg_.sliding_window;
    a.ratio = cfg_.compress_ratio(L);
    a.norm_eps = eps;
    a.rope = a.ratio > 0 ? &rope_compressed_ : &rope_window_;
    a.compressor = CompressorSpec{a.ratio, a.head_dim, a.rope_dim, false, eps, a.rope};
    a.indexer.heads = cfg_.index_n_heads;
    a.indexer.head_dim = cfg_.index_head_dim;
    a.indexer.rope_dim = cfg_.qk_rope_head_dim;
    a.indexer.topk = cfg_.index_topk;
    a.indexer.rope = a.rope;
    a.indexer.compressor = CompressorSpec{a.ratio, cfg_.index_head_dim, a.rope_dim, true, eps, a.rope};
    attn_.push_back(a);
    MoeSpec m;
    m.dim = cfg_.hidden_size;
    m.experts = cfg_.n_routed_experts;
    m.topk = cfg_.num_experts_per_tok;
    m.inter = cfg_.moe_intermediate_size;
    m.scoring = cfg_.scoring_func;
    m.route_scale = float(cfg_.routed_scaling_factor);
    m.swiglu_limit = float(cfg_.swiglu_limit);
    m.hash = cfg_.is_hash_layer(L);
    m.vocab = cfg_.vocab_size;
    moe_.push_back(m);
  }
}

std::unique_ptr<models::Sequence> Model::new_sequence(const models::CacheOptions& o) const {
  return std::make_unique<SequenceState>(new_state(layout_options(o).index_keys));
}

std::unique_ptr<models::Workspace> Model::workspace(void* memory, int64_t bytes, int64_t max_context,
                                                    int64_t parts) const {
  auto w = std::make_unique<IndexerScratch>(indexer_scratch_view(cfg_, max_context, parts, memory, bytes));
  if (w->empty()) return nullptr;
  return w;
}

SequenceState Model::new_state(IndexKeyFormat index_keys) const {
  SequenceState st;
  const size_t nl = size_t(cfg_.num_hidden_layers);
  st.layers.resize(nl);
  for (size_t L = 0; L < nl; ++L) init_layer_state(attn_[L], st.layers[L], index_keys);
  st.mtp.resize(w_.mtp.size());
  st.mtp_pos.assign(w_.mtp.size(), 0);
  for (size_t j = 0; j < w_.mtp.size(); ++j) init_layer_state(attn_[nl + j], st.mtp[j], index_keys);
  return st;
}

vector<float> Model::logits_from_state(const float* state) const {
  return logits_from_state(state, w_.hc_head, w_.norm);
}

vector<float> Model::logits_from_state(const float* state, const HcWeights& hcw, const uint16_t* norm) const {
  const int64_t d = cfg_.hidden_size;
  vector<float> y(static_cast<size_t>(d)), logits(static_cast<size_t>(cfg_.vocab_size));
  hc_head(hcw, hc_, state, y.data());
  kernels::rms_norm(y.data(), norm, d, float(cfg_.rms_norm_eps), y.data());
  kernels::linear(w_.head, y.data(), 1, logits.data(), false);
  return logits;
}

void Model::run_block(const LayerWeights& lw, const AttentionSpec& as, const MoeSpec& ms,
                      const std::vector<AttentionSegment>& segs, float* h, const int64_t* ids, int64_t n) const {
  const int64_t d = cfg_.hidden_size, hc = cfg_.hc_mult;
  const float eps = float(cfg_.rms_norm_eps);
  // each written whole before it is read: not zeroed
  CallBuffer<float> xin(size_t(n * d)), out(size_t(n * d)), post(size_t(n * hc)), comb(size_t(n * hc * hc));
  hc_pre_rows(lw.hc_attn, hc_, h, n, xin.data(), post.data(), comb.data());
  for (int64_t t = 0; t < n; ++t) kernels::rms_norm(xin.data() + t * d, lw.attn_norm, d, eps, xin.data() + t * d);
  attention_forward(lw.attn, as, segs, xin.data(), out.data());
  hc_post_rows(hc_, out.data(), post.data(), comb.data(), n, h);
  hc_pre_rows(lw.hc_ffn, hc_, h, n, xin.data(), post.data(), comb.data());
  for (int64_t t = 0; t < n; ++t) kernels::rms_norm(xin.data() + t * d, lw.ffn_norm, d, eps, xin.data() + t * d);
  moe_forward(lw.ffn, ms, xin.data(), ids, n, out.data());
  hc_post_rows(hc_, out.data(), post.data(), comb.data(), n, h);
}

void Model::forward_batch(std::vector<BatchItem>& items) const {
  int64_t n = 0;
  std::vector<SequenceState*> states;
  for (const auto& it : items) {
    if (!it.state) throw Error("forward: no sequence state");
    SequenceState& st = state_of(*it.state);
    if (st.layers.size() != size_t(cfg_.num_hidden_layers))
      throw Error("forward: sequence state does not belong to this model");
    check_ids(it.ids, it.n, st.pos);
    n += it.n;
    states.push_back(&st);
  }
  for (size_t i = 0; i < items.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (items[i].state == items[j].state) throw Error("forward_batch: a sequence appears twice in one batch");
  const int64_t d = cfg_.hidden_size, hc = cfg_.hc_mult;
  vector<int64_t> ids;
  ids.reserve(size_t(n));
  for (const auto& it : items) ids.insert(ids.end(), it.ids, it.ids + it.n);
  vector<float> h(size_t(n * hc * d));
  for (int64_t t = 0; t < n; ++t)
    for (int64_t j = 0; j < hc; ++j)
      for (int64_t c = 0; c < d; ++c) h[size_t((t * hc + j) * d + c)] = bf16_to_f32(w_.embed[ids[size_t(t)] * d + c]);
  std::vector<AttentionSegment> segs(items.size());
  for (size_t L = 0; L < size_t(cfg_.num_hidden_layers); ++L) {
    for (size_t i = 0; i < items.size(); ++i)
      segs[i] = {&states[i]->layers[L], states[i]->pos, items[i].n, items[i].undo, states[i]->indexer_scratch};
    run_block(w_.layers[L], attn_[L], moe_[L], segs, h.data(), ids.data(), n);
  }
  // The head over every wanted row at once (logits_from_state, stacked): it is the largest
  // matrix, so reading it once per batch matters most.
  const int64_t hcd = hc * d, V = cfg_.vocab_size;
  vector<float> y;
  int64_t row = 0, wanted = 0;
  for (auto& it : items) {
    it.state->pos += it.n;
    if (it.hidden) it.hidden->assign(h.begin() + row * hcd, h.begin() + (row + it.n) * hcd);
    row += it.n;
    if (!it.logits && !it.all_logits) continue;
    for (int64_t r = it.all_logits ? row - it.n : row - 1; r < row; ++r) {
      y.resize(size_t((wanted + 1) * d));
      float* yr = y.data() + wanted * d;
      hc_head(w_.hc_head, hc_, h.data() + r * hcd, yr);
      kernels::rms_norm(yr, w_.norm, d, float(cfg_.rms_norm_eps), yr);
      ++wanted;
    }
  }
  if (!wanted) return;
  vector<float> logits(size_t(wanted * V));
  kernels::linear(w_.head, y.data(), wanted, logits.data(), false);
  int64_t k = 0;
  for (auto& it : items) {
    if (!it.logits && !it.all_logits) continue;
    const int64_t rows = it.all_logits ? it.n : 1;
    it.out.assign(logits.begin() + k * V, logits.begin() + (k + rows) * V);
    k += rows;
  }
}

void Model::mtp_forward_batch(std::vector<MtpItem>& items, int64_t j) const {
  if (j < 0 || j >= n_mtp()) throw Error("mtp_forward: the checkpoint has no MTP block " + std::to_string(j));
  int64_t n = 0;
  std::vector<SequenceState*> states;
  for (const auto& it : items) {
    if (!it.state) throw Error("mtp_forward: no sequence state");
    SequenceState& st = state_of(*it.state);
    if (st.mtp.size() != w_.mtp.size()) throw Error("mtp_forward: sequence state does not belong to this model");
    check_ids(it.next_ids, it.n, st.mtp_pos[size_t(j)]);
    n += it.n;
    states.push_back(&st);
  }
  for (size_t a = 0; a < items.size(); ++a)
    for (size_t b = 0; b < a; ++b)
      if (items[a].state == items[b].state) throw Error("mtp_forward: a sequence appears twice in one batch");
  if (items.empty()) return;
  const MtpWeights& m = w_.mtp[size_t(j)];
  const int64_t d = cfg_.hidden_size, hc = cfg_.hc_mult, hcd = hc * d;
  const float eps = float(cfg_.rms_norm_eps);
  vector<int64_t> ids;
  ids.reserve(size_t(n));
  for (const auto& it : items) ids.insert(ids.end(), it.next_ids, it.next_ids + it.n);
  // x_k = bf16(e_proj(enorm(embed(next))) + h_proj(hnorm(h_k))) for every stream k
  vector<float> e(size_t(n * d)), ep(size_t(n * d)), hn(size_t(n * hcd)), hp(size_t(n * hcd));
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t c = 0; c < d; ++c) e[size_t(t * d + c)] = bf16_to_f32(w_.embed[ids[size_t(t)] * d + c]);
    kernels::rms_norm(e.data() + t * d, m.enorm, d, eps, e.data() + t * d);
  }
  int64_t row = 0;
  for (const auto& it : items) {
    for (int64_t r = 0; r < it.n * hc; ++r) kernels::rms_norm(it.hidden + r * d, m.hnorm, d, eps, hn.data() + (row * hc + r) * d);
    row += it.n;
  }
  kernels::linear(m.e_proj, e.data(), n, ep.data(), true);
  kernels::linear(m.h_proj, hn.data(), n * hc, hp.data(), true);
  vector<float> x(size_t(n * hcd));
  for (int64_t t = 0; t < n; ++t)
    for (int64_t k = 0; k < hc; ++k)
      for (int64_t c = 0; c < d; ++c)
        x[size_t((t * hc + k) * d + c)] = round_bf16(ep[size_t(t * d + c)] + hp[size_t((t * hc + k) * d + c)]);
  const size_t L = size_t(cfg_.num_hidden_layers + j);
  std::vector<AttentionSegment> segs;
  for (size_t i = 0; i < items.size(); ++i)
    segs.push_back({&states[i]->mtp[size_t(j)], states[i]->mtp_pos[size_t(j)], items[i].n, items[i].undo,
                    states[i]->indexer_scratch});
  run_block(m.block, attn_[L], moe_[L], segs, x.data(), ids.data(), n);
  // The head over every item's last row at once (the largest matrix: read once per batch).
  vector<float> y;
  int64_t wanted = 0;
  row = 0;
  for (auto& it : items) {
    it.state->mtp_pos[size_t(j)] += it.n;
    row += it.n;
    if (!it.logits) continue;
    y.resize(size_t((wanted + 1) * d));
    float* yr = y.data() + wanted * d;
    hc_head(m.hc_head, hc_, x.data() + (row - 1) * hcd, yr);
    kernels::rms_norm(yr, m.norm, d, eps, yr);
    ++wanted;
  }
  const int64_t V = cfg_.vocab_size;
  vector<float> logits(size_t(wanted * V));
  if (wanted) kernels::linear(w_.head, y.data(), wanted, logits.data(), false);
  int64_t k = 0;
  row = 0;
  for (auto& it : items) {
    it.streams.assign(x.begin() + row * hcd, x.begin() + (row + it.n) * hcd);
    row += it.n;
    if (!it.logits) continue;
    it.out.assign(logits.begin() + k * V, logits.begin() + (k + 1) * V);
    ++k;
  }
}

void Model::restart_mtp(models::Sequence& s, int64_t pos, int64_t j) const {
  if (j < 0 || j >= n_mtp()) throw Error("restart_mtp: the checkpoint has no MTP block " + std::to_string(j));
  SequenceState& st = state_of(s);
  LayerState& L = st.mtp[size_t(j)];
  // Fresh values written into the state's own memory (a pooled state stays bound).
  LayerState fresh;
  init_layer_state(attn_[size_t(cfg_.num_hidden_layers + j)], fresh,
                   L.index_keys.codec.kind == EntryCodec::Kind::index_fp4 ? IndexKeyFormat::fp4 : IndexKeyFormat::fp8);
  auto refill = [](auto& to, const auto& from) { std::copy(from.begin(), from.end(), to.begin()); };
  refill(L.ring, fresh.ring);
  for (auto [c, f] : {std::pair{&L.compressor, &fresh.compressor}, std::pair{&L.index_keys, &fresh.index_keys}}) {
    if (c->ratio == 0) continue;
    refill(c->kv, f->kv);
    refill(c->score, f->score);
    c->entries.resize(0);
  }
  st.mtp_pos[size_t(j)] = pos;
}

std::unique_ptr<models::Sequence> Model::synthetic_sequence(int64_t pos, uint64_t seed,
                                                            const models::CacheOptions& o) const {
  return std::make_unique<SequenceState>(synthetic_state(*this, pos, seed, layout_options(o).index_keys));
}

// What each layer holds (the seed's §4.3 table): window slots in use, compressed entries,
// indexer keys, and tokens of the unfinished block waiting in the compressor.
std::string Model::describe_state(const models::Sequence& s) const {
  const SequenceState& st = state_of(s);
  std::string out = "after " + std::to_string(st.pos) + " tokens:\n";
  char line[160];
  for (int64_t l = 0; l < cfg_.num_hidden_layers; ++l) {
    const auto& ls = st.layers[size_t(l)];
    const int64_t r = cfg_.compress_ratio(l);
    std::snprintf(line, sizeof line, "  layer %2lld %-6s window %3lld/%lld", (long long)l,
                  layer_kind_name(cfg_.layer_kind(l)), (long long)std::min(st.pos, cfg_.sliding_window),
                  (long long)cfg_.sliding_window);
    out += line;
    if (r > 0) {
      std::snprintf(line, sizeof line, "  entries %6lld  tail %3lld", (long long)ls.compressor.n_entries(),
                    (long long)(st.pos - ls.compressor.n_entries() * r));
      out += line;
    }
    if (r == 4) {
      std::snprintf(line, sizeof line, "  index keys %6lld", (long long)ls.index_keys.n_entries());
      out += line;
    }
    out += "\n";
  }
  return out;
}

}  // namespace strata::dsv4
