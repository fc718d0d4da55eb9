#include "models/model.h"

#include "core/error.h"

namespace strata::models {

std::vector<float> Model::forward(Sequence& st, const int64_t* ids, int64_t n, std::vector<float>* hidden) const {
  std::vector<BatchItem> items(1);
  items[0].state = &st;
  items[0].ids = ids;
  items[0].n = n;
  items[0].logits = true;
  items[0].hidden = hidden;
  forward_batch(items);
  return std::move(items[0].out);
}

void Model::advance(Sequence& st, const int64_t* ids, int64_t n, std::vector<float>* hidden) const {
  std::vector<BatchItem> items(1);
  items[0].state = &st;
  items[0].ids = ids;
  items[0].n = n;
  items[0].hidden = hidden;
  forward_batch(items);
}

std::vector<float> Model::forward_all(Sequence& st, const int64_t* ids, int64_t n, cache::UndoLog& undo,
                                      std::vector<float>* hidden) const {
  std::vector<BatchItem> items(1);
  items[0].state = &st;
  items[0].ids = ids;
  items[0].n = n;
  items[0].all_logits = true;
  items[0].undo = &undo;
  items[0].hidden = hidden;
  forward_batch(items);
  return std::move(items[0].out);
}

void Model::rollback(Sequence& st, cache::UndoLog& undo, int64_t pos) const {
  if (pos < 0 || pos > st.pos) throw Error("rollback: position " + std::to_string(pos) + " is not behind the state");
  undo.rollback(pos);
  st.pos = pos;
}

void Model::mtp_forward_batch(std::vector<MtpItem>&, int64_t) const {
  throw Error("this model has no MTP block");
}

std::vector<float> Model::mtp_forward(Sequence& st, const float* hidden, const int64_t* next_ids, int64_t n, int64_t j,
                                      cache::UndoLog* undo, std::vector<float>* streams) const {
  std::vector<MtpItem> items(1);
  items[0] = {&st, hidden, next_ids, n, undo, true, {}, {}};
  mtp_forward_batch(items, j);
  if (streams) *streams = std::move(items[0].streams);
  return std::move(items[0].out);
}

std::vector<float> Model::mtp_advance(Sequence& st, const float* hidden, const int64_t* next_ids, int64_t n, int64_t j,
                                      cache::UndoLog* undo) const {
  std::vector<MtpItem> items(1);
  items[0] = {&st, hidden, next_ids, n, undo, false, {}, {}};
  mtp_forward_batch(items, j);
  return std::move(items[0].streams);
}

void Model::rollback_mtp(Sequence& st, cache::UndoLog& undo, int64_t pos, int64_t j) const {
  if (j < 0 || j >= n_mtp()) throw Error("rollback_mtp: the checkpoint has no MTP block " + std::to_string(j));
  if (pos < 0 || pos > st.mtp_pos[size_t(j)])
    throw Error("rollback_mtp: position " + std::to_string(pos) + " is not behind the state");
  undo.rollback(pos);
  st.mtp_pos[size_t(j)] = pos;
}

void Model::restart_mtp(Sequence&, int64_t, int64_t) const { throw Error("this model has no MTP block"); }

void Model::check_ids(const int64_t* ids, int64_t n, int64_t pos0) const {
  if (n < 1) throw Error("forward: no tokens to run");
  for (int64_t i = 0; i < n; ++i)
    if (ids[i] < 0 || ids[i] >= vocab_size())
      throw Error("token id " + std::to_string(ids[i]) + " is outside the vocabulary [0, " +
                  std::to_string(vocab_size()) + ")");
  if (pos0 + n > max_positions())
    throw Error("sequence of " + std::to_string(pos0 + n) + " tokens exceeds max_position_embeddings " +
                std::to_string(max_positions()));
}

}  // namespace strata::models
