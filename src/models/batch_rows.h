// The end of a batched forward pass, the same for every model whose last hidden rows feed one
// head: each item's state advances by its tokens, its hidden rows (or the MTP block's output
// streams) go to the caller, and the rows whose logits are wanted are gathered in item order,
// so that the head reads its weights once for the whole batch; then each item gets its logits.
#pragma once
#include <cstdint>
#include <vector>

#include "models/model.h"

namespace strata::models {

// h: the batch's final rows [Σ n][d]. Returns the wanted rows (the last of an item with logits,
// every row of one with all_logits).
std::vector<float> finish_rows(std::vector<Model::BatchItem>& items, const std::vector<float>& h, int64_t d);
// logits [rows][vocab] of finish_rows' rows, handed to their items.
void hand_out_logits(std::vector<Model::BatchItem>& items, const std::vector<float>& logits, int64_t vocab);

// The same for MTP block j: mtp_pos[j] advances, `streams` gets every row, the last row of an
// item with logits is wanted.
std::vector<float> finish_mtp_rows(std::vector<Model::MtpItem>& items, const std::vector<float>& x, int64_t d, int64_t j);
void hand_out_mtp_logits(std::vector<Model::MtpItem>& items, const std::vector<float>& logits, int64_t vocab);

}  // namespace strata::models
