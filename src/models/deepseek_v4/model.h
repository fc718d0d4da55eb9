// The DeepSeek-V4 forward pass on CPU: embedding → hc_mult streams → per layer
// (hc_pre, attn_norm, attention, hc_post; hc_pre, ffn_norm, MoE, hc_post) → hc_head →
// final norm → fp32 logits. Numerics follow DeepSeek's reference inference code (bf16
// activations, FP8/FP4 linears with FP8 activations, fp32 router/compressor/head); every
// reduction has a fixed order, so logits are bitwise independent of thread count and of how
// a sequence is split into chunks. The MTP blocks (mtp.j) run on request (mtp_forward).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "kernels/rope.h"
#include "models/deepseek_v4/attention.h"
#include "models/deepseek_v4/config.h"
#include "models/deepseek_v4/mhc.h"
#include "models/deepseek_v4/moe.h"
#include "models/deepseek_v4/state.h"
#include "models/deepseek_v4/weights.h"

namespace strata::dsv4 {

class Model {
 public:
  // Opens DIR (config.json + safetensors), checks the checkpoint against the config, binds
  // the weights.
  static std::unique_ptr<Model> load(const std::string& dir);
  Model(Config c, SafetensorsCheckpoint ckpt);
  // Specs point at the model's RoPE tables: not copyable or movable (hold it by unique_ptr).
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const Config& config() const { return cfg_; }
  // Longest sequence a state may reach (max_position_embeddings).
  int64_t max_positions() const { return cfg_.max_position_embeddings; }

  // An empty state; index_keys: the storage of the indexer keys (same values either way).
  SequenceState new_sequence(IndexKeyFormat index_keys = IndexKeyFormat::fp8) const;

  // Runs ids[0..n) at positions st.pos .. st.pos+n-1, advancing st; returns the fp32 logits
  // [vocab] of the last token. Throws Error for out-of-vocab ids or a sequence past
  // max_positions() (the state is left untouched then). n must be >= 1.
  // hidden, when given, receives the final hc streams of every token [n][hc][d] (bf16 values),
  // the input of the MTP block.
  // const: the model is read-only; different sequences may run concurrently from different threads.
  std::vector<float> forward(SequenceState& st, const int64_t* ids, int64_t n, std::vector<float>* hidden = nullptr) const;
  // The same without the logits (a prefill chunk whose logits nobody reads).
  void advance(SequenceState& st, const int64_t* ids, int64_t n, std::vector<float>* hidden = nullptr) const;
  std::vector<float> prefill(SequenceState& st, const std::vector<int64_t>& ids) const {
    return forward(st, ids.data(), int64_t(ids.size()));
  }
  std::vector<float> decode(SequenceState& st, int64_t id) const { return forward(st, &id, 1); }

  // Several sequences in one pass: every item's ids run at its state's position and advance
  // it; the linear layers (attention projections, MoE, ...) see all items' rows at once, so
  // each weight matrix is read once per call. Bitwise equal to forward()/advance() per item.
  // Items with logits = true get the fp32 logits of their last token in `out`. The states
  // must be distinct. On an error (bad ids, too long) no state is touched.
  // all_logits: `out` gets every row's logits [n][vocab] instead (speculative verification).
  // undo: records every state write of the item's tokens, so rollback() can undo a suffix.
  // hidden: receives the item's final streams [n][hc][d] (the MTP block's input).
  struct BatchItem {
    SequenceState* state = nullptr;
    const int64_t* ids = nullptr;
    int64_t n = 0;
    bool logits = false;
    bool all_logits = false;
    cache::UndoLog* undo = nullptr;
    std::vector<float>* hidden = nullptr;
    std::vector<float> out;
  };
  void forward_batch(std::vector<BatchItem>& items) const;

  // MTP block j (reference MTPBlock): hidden = main streams [n][hc][d] of the tokens at
  // positions st.mtp_pos[j].., next_ids[t] = the token that follows token t. Returns the fp32
  // logits of the last position (its prediction of the token after next_ids[n-1]).
  // undo records the block's state writes (a draft is undone with rollback_mtp); streams, when
  // given, receives the block's output streams [n][hc][d] (the input of a further draft step).
  int64_t n_mtp() const { return int64_t(w_.mtp.size()); }
  std::vector<float> mtp_forward(SequenceState& st, const float* hidden, const int64_t* next_ids, int64_t n, int64_t j = 0,
                                 cache::UndoLog* undo = nullptr, std::vector<float>* streams = nullptr) const;
  // The same without the logits (the head is the largest matrix: a catch-up that only feeds the
  // block its positions skips it); returns the block's output streams [n][hc][d].
  std::vector<float> mtp_advance(SequenceState& st, const float* hidden, const int64_t* next_ids, int64_t n,
                                 int64_t j = 0, cache::UndoLog* undo = nullptr) const;
  // MTP block j over several sequences in one pass, as forward_batch for the main layers: each
  // weight matrix (the head above all) is read once for every item's rows, and a routed
  // expert chosen by several items runs once for all their rows. Bitwise equal to
  // mtp_forward / mtp_advance per item. Items with logits = true get the fp32 logits of their
  // last row in `out`; `streams` gets every item's output streams [n][hc][d]. The states must
  // be distinct; on an error (bad ids, too long) no state is touched.
  struct MtpItem {
    SequenceState* state = nullptr;
    const float* hidden = nullptr;  // main streams [n][hc][d]
    const int64_t* next_ids = nullptr;
    int64_t n = 0;
    cache::UndoLog* undo = nullptr;
    bool logits = false;
    std::vector<float> streams, out;
  };
  void mtp_forward_batch(std::vector<MtpItem>& items, int64_t j = 0) const;

  // Speculative decoding: runs ids[0..n) like forward() but returns the logits of every row
  // [n][vocab] (row i: the prediction after ids[i]), recording every state write in undo.
  std::vector<float> forward_all(SequenceState& st, const int64_t* ids, int64_t n, cache::UndoLog& undo,
                                 std::vector<float>* hidden = nullptr) const;
  // Returns the main layers' state to what it was after the tokens before position pos (pos
  // within the tokens undo recorded); undo keeps the records of earlier positions.
  void rollback(SequenceState& st, cache::UndoLog& undo, int64_t pos) const;
  // The same for MTP block j's state.
  void rollback_mtp(SequenceState& st, cache::UndoLog& undo, int64_t pos, int64_t j = 0) const;

  // Pieces for tests and tools.
  const ModelWeights& weights() const { return w_; }
  const SafetensorsCheckpoint& checkpoint() const { return ckpt_; }  // the mappings the weights point into
  const AttentionSpec& attention_spec(int64_t layer) const { return attn_[size_t(layer)]; }
  const MoeSpec& moe_spec(int64_t layer) const { return moe_[size_t(layer)]; }
  const HcSpec& hc_spec() const { return hc_; }
  // Final stage: hc_head, norm, head on one [hc, d] state.
  std::vector<float> logits_from_state(const float* state) const;
  std::vector<float> logits_from_state(const float* state, const HcWeights& hc_head, const uint16_t* norm) const;

 private:
  Config cfg_;
  SafetensorsCheckpoint ckpt_;
  ModelWeights w_;
  kernels::RopeTable rope_window_, rope_compressed_;
  // One Block on the streams h [n][hc][d] in place.
  void run_block(const LayerWeights& lw, const AttentionSpec& as, const MoeSpec& ms, LayerState& ls, float* h,
                 const int64_t* ids, int64_t n, int64_t pos0, cache::UndoLog* undo = nullptr,
                 const IndexerScratch* scratch = nullptr) const;
  // The same over stacked sequences (segs: each one's layer state, position and rows).
  void run_block(const LayerWeights& lw, const AttentionSpec& as, const MoeSpec& ms,
                 const std::vector<AttentionSegment>& segs, float* h, const int64_t* ids, int64_t n) const;
  void check_ids(const int64_t* ids, int64_t n, int64_t pos0) const;
  // Runs the main layers; returns the final streams [n][hc][d].
  std::vector<float> run_main(SequenceState& st, const int64_t* ids, int64_t n) const;

  std::vector<AttentionSpec> attn_;  // main layers, then MTP blocks
  std::vector<MoeSpec> moe_;
  HcSpec hc_;
};

}  // namespace strata::dsv4
