#include "models/batch_rows.h"

namespace strata::models {

std::vector<float> finish_rows(std::vector<Model::BatchItem>& items, const std::vector<float>& h, int64_t d) {
  std::vector<float> wanted;
  int64_t row = 0;
  for (auto& it : items) {
    it.state->pos += it.n;
    if (it.hidden) it.hidden->assign(h.begin() + row * d, h.begin() + (row + it.n) * d);
    row += it.n;
    if (!it.logits && !it.all_logits) continue;
    const int64_t first = it.all_logits ? row - it.n : row - 1;
    wanted.insert(wanted.end(), h.begin() + first * d, h.begin() + row * d);
  }
  return wanted;
}

void hand_out_logits(std::vector<Model::BatchItem>& items, const std::vector<float>& logits, int64_t vocab) {
  int64_t k = 0;
  for (auto& it : items) {
    if (!it.logits && !it.all_logits) continue;
    const int64_t r = it.all_logits ? it.n : 1;
    it.out.assign(logits.begin() + k * vocab, logits.begin() + (k + r) * vocab);
    k += r;
  }
}

std::vector<float> finish_mtp_rows(std::vector<Model::MtpItem>& items, const std::vector<float>& x, int64_t d, int64_t j) {
  std::vector<float> wanted;
  int64_t row = 0;
  for (auto& it : items) {
    it.state->mtp_pos[size_t(j)] += it.n;
    it.streams.assign(x.begin() + row * d, x.begin() + (row + it.n) * d);
    row += it.n;
    if (it.logits) wanted.insert(wanted.end(), x.begin() + (row - 1) * d, x.begin() + row * d);
  }
  return wanted;
}

void hand_out_mtp_logits(std::vector<Model::MtpItem>& items, const std::vector<float>& logits, int64_t vocab) {
  int64_t k = 0;
  for (auto& it : items)
    if (it.logits) it.out.assign(logits.begin() + k * vocab, logits.begin() + (k + 1) * vocab), ++k;
}

}  // namespace strata::models
