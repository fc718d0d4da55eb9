// The model interface: what the engine, the prefix cache, speculative decoding, the server and
// every command know of a model. Each architecture lives in its own folder under src/models
// and implements ModelConfig (what a config.json alone tells: caches, parameters, tensors) and
// Model (a loaded checkpoint that runs batches of tokens against sequences); the registry
// (registry.h) builds them from config.json. Nothing above src/models names an architecture.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cache/cache_map.h"
#include "cache/cache_spec.h"
#include "cache/undo_log.h"
#include "core/error.h"
#include "models/model_config.h"

namespace strata {
class SafetensorsCheckpoint;
}

namespace strata::models {

// The forward pass's working memory beside the caches (e.g. a sparse indexer's scores), carved
// by the engine from its pool once and shared by every sequence it runs, one pass at a time.
class Workspace {
 public:
  virtual ~Workspace() = default;
};

// One sequence's state: its position, every layer's caches (reached through cache_map), and
// the MTP block's progress when speculative decoding drafts with it. A state stands alone
// (owned memory) or lives in the engine's pool (cache/cache_map.h binds it there); the forward
// pass reads and writes it the same way either way.
class Sequence {
 public:
  virtual ~Sequence() = default;
  int64_t pos = 0;  // tokens processed = the position of the next token
  // MTP block j has run positions [0, mtp_pos[j]). Speculative decoding keeps the MTP one
  // token behind the main layers: mtp_hidden is then the main hidden row (Model::hidden_width
  // floats) of position pos - 1, whose next token it has not seen yet.
  std::vector<int64_t> mtp_pos;
  std::vector<float> mtp_hidden;

  // The storage of each spec of `layout` (a layout of this sequence's model, from options
  // that agree with the state's), in spec order. Throws strata::Error when they do not match.
  virtual cache::CacheMap cache_map(const cache::CacheLayout& layout) = 0;
  // An owned copy (never aliasing the pool).
  virtual std::unique_ptr<Sequence> clone() const = 0;
  // Where the forward pass works (Model::workspace); null: memory of its own per call.
  virtual void use_workspace(const Workspace* w) {}
};

class Model {
 public:
  virtual ~Model() = default;

  virtual const ModelConfig& model_config() const = 0;
  const ModelFacts& facts() const { return model_config().facts(); }
  int64_t vocab_size() const { return facts().vocab_size; }
  int64_t max_positions() const { return facts().max_positions; }
  // The mappings the weights point into.
  virtual const SafetensorsCheckpoint& checkpoint() const = 0;
  // Whether this process reads the tensor: false for routed experts other ranks run under
  // expert parallelism (their pages are never read in here).
  virtual bool holds_tensor(const std::string& name) const { return true; }
  // Whether its routed experts can be spread over the ranks of an MPI job.
  virtual bool expert_parallel() const { return false; }

  // An empty state whose caches follow model_config().cache_layout(o) (with o.include_mtp,
  // the MTP block's too; a state always holds it, bound to the pool only when the layout has it).
  virtual std::unique_ptr<Sequence> new_sequence(const CacheOptions& o = {}) const = 0;
  // A view of `bytes` (ModelConfig::workspace_bytes) of `memory` for contexts up to max_context
  // and `parts` threads; null when the model needs none.
  virtual std::unique_ptr<Workspace> workspace(void* memory, int64_t bytes, int64_t max_context, int64_t parts) const {
    return nullptr;
  }

  // Several sequences in one pass: every item's ids run at its state's position and advance
  // it; each weight matrix is read once for all items' rows. Bitwise equal to running each
  // item alone, in any chunking. Items with logits = true get the fp32 logits of their last
  // token in `out`; all_logits: every row's [n][vocab] (speculative verification). undo
  // records every state write of the item's tokens, so rollback() can undo a suffix. hidden
  // receives the item's final hidden rows [n][hidden_width] (the MTP block's input). The
  // states must be distinct. Throws strata::Error for out-of-vocabulary ids or a sequence past
  // max_positions(); no state is touched then.
  struct BatchItem {
    Sequence* state = nullptr;
    const int64_t* ids = nullptr;
    int64_t n = 0;
    bool logits = false;
    bool all_logits = false;
    cache::UndoLog* undo = nullptr;
    std::vector<float>* hidden = nullptr;
    std::vector<float> out;
  };
  virtual void forward_batch(std::vector<BatchItem>& items) const = 0;

  // One sequence (forward_batch of one item): the logits of the last token.
  std::vector<float> forward(Sequence& st, const int64_t* ids, int64_t n, std::vector<float>* hidden = nullptr) const;
  // The same without the logits (a prefill chunk whose logits nobody reads).
  void advance(Sequence& st, const int64_t* ids, int64_t n, std::vector<float>* hidden = nullptr) const;
  std::vector<float> prefill(Sequence& st, const std::vector<int64_t>& ids) const {
    return forward(st, ids.data(), int64_t(ids.size()));
  }
  std::vector<float> decode(Sequence& st, int64_t id) const { return forward(st, &id, 1); }
  // Speculative verification: every row's logits [n][vocab], every state write recorded in undo.
  std::vector<float> forward_all(Sequence& st, const int64_t* ids, int64_t n, cache::UndoLog& undo,
                                 std::vector<float>* hidden = nullptr) const;
  // Returns the main layers' state to what it was after the tokens before pos (pos within the
  // tokens undo recorded); undo keeps the records of earlier positions.
  virtual void rollback(Sequence& st, cache::UndoLog& undo, int64_t pos) const;

  // --- The MTP block (multi-token prediction), the drafter of speculative decoding ---
  // Blocks the checkpoint has (0: no drafter).
  virtual int64_t n_mtp() const { return 0; }
  // MTP block j over several sequences: hidden = the main hidden rows [n][hidden_width] of the
  // tokens at positions st.mtp_pos[j].., next_ids[t] = the token that follows token t. Items
  // with logits get the fp32 logits of their last row (its prediction of the token after
  // next_ids[n-1]); `streams` gets every row's output hidden rows (the input of a further
  // draft step). undo records the block's state writes (undone by rollback_mtp).
  struct MtpItem {
    Sequence* state = nullptr;
    const float* hidden = nullptr;
    const int64_t* next_ids = nullptr;
    int64_t n = 0;
    cache::UndoLog* undo = nullptr;
    bool logits = false;
    std::vector<float> streams, out;
  };
  virtual void mtp_forward_batch(std::vector<MtpItem>& items, int64_t j = 0) const;
  std::vector<float> mtp_forward(Sequence& st, const float* hidden, const int64_t* next_ids, int64_t n, int64_t j = 0,
                                 cache::UndoLog* undo = nullptr, std::vector<float>* streams = nullptr) const;
  std::vector<float> mtp_advance(Sequence& st, const float* hidden, const int64_t* next_ids, int64_t n, int64_t j = 0,
                                 cache::UndoLog* undo = nullptr) const;
  // The same as rollback() for MTP block j's state.
  virtual void rollback_mtp(Sequence& st, cache::UndoLog& undo, int64_t pos, int64_t j = 0) const;
  // Empties MTP block j's state in place (its pool binding kept) to start at position pos: an
  // MTP that fell out of step restarts there (its drafts are worse for a while, never wrong).
  virtual void restart_mtp(Sequence& st, int64_t pos, int64_t j = 0) const;

  // --- Tools ---
  // A state as if `pos` tokens had been run, with random cache contents (decode cost at long
  // context without hours of prefill: `strata bench --context`); null if unsupported.
  virtual std::unique_ptr<Sequence> synthetic_sequence(int64_t pos, uint64_t seed, const CacheOptions& o) const {
    return nullptr;
  }
  // What each layer holds (`strata logits --stats`).
  virtual std::string describe_state(const Sequence& st) const { return {}; }

 protected:
  // Throws strata::Error for an empty run, an id outside the vocabulary, or a sequence that
  // would pass max_positions() once the n tokens at pos0 run.
  void check_ids(const int64_t* ids, int64_t n, int64_t pos0) const;
  // A batch's states as the model's own state type S (one with `layers` layers): a missing
  // state, another model's, one that appears twice, or bad ids throw strata::Error before any
  // state changes.
  template <class S>
  std::vector<S*> batch_states(const std::vector<BatchItem>& items, size_t layers) const {
    std::vector<S*> out;
    for (const auto& it : items) {
      if (!it.state) throw Error("forward: no sequence state");
      auto* st = dynamic_cast<S*>(it.state);
      if (!st || st->layers.size() != layers) throw Error("forward: sequence state does not belong to this model");
      check_ids(it.ids, it.n, st->pos);
      if (std::find(out.begin(), out.end(), st) != out.end())
        throw Error("forward_batch: a sequence appears twice in one batch");
      out.push_back(st);
    }
    return out;
  }
};

}  // namespace strata::models
