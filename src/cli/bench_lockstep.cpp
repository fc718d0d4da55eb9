#include "cli/bench_lockstep.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "dist/world.h"

namespace strata::cli {
namespace {

// Sequence i's prompt: ids spread over the vocabulary, different per sequence.
std::vector<int64_t> prompt_of(int64_t i, int64_t n, int64_t vocab) {
  std::vector<int64_t> ids;
  for (int64_t t = 0; t < n; ++t) ids.push_back((t * 7919 + i * 104729 + 17) % vocab);
  return ids;
}

int64_t argmax(const std::vector<float>& v) {
  return int64_t(std::max_element(v.begin(), v.end()) - v.begin());
}

}  // namespace

nlohmann::ordered_json bench_lockstep_batches(const models::Model& model, int64_t prompt_tokens, int64_t decode_tokens,
                                              const std::vector<int>& batches) {
  if (prompt_tokens < 1 || decode_tokens < 1) throw Error("bench --batches: prompt and decode need at least 1 token");
  if (prompt_tokens + decode_tokens > model.max_positions())
    throw Error("bench --batches: prompt + decode tokens exceed max_position_embeddings");
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  double first = 0;
  for (int batch : batches) {
    if (batch < 1) throw Error("bench --batches: batch sizes must be at least 1");
    std::vector<std::unique_ptr<models::Sequence>> seqs;
    std::vector<std::vector<int64_t>> prompts;
    std::vector<models::Model::BatchItem> items;
    for (int i = 0; i < batch; ++i) {
      seqs.push_back(model.new_sequence());
      prompts.push_back(prompt_of(i, prompt_tokens, model.vocab_size()));
    }
    for (int i = 0; i < batch; ++i)
      items.push_back({seqs[size_t(i)].get(), prompts[size_t(i)].data(), prompt_tokens, true, false});
    model.forward_batch(items);
    std::vector<int64_t> next(static_cast<size_t>(batch));
    for (int i = 0; i < batch; ++i) next[size_t(i)] = argmax(items[size_t(i)].out);
    const dist::ExchangeStats x0 = dist::exchange_stats();
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t step = 0; step < decode_tokens; ++step) {
      items.clear();
      for (int i = 0; i < batch; ++i) items.push_back({seqs[size_t(i)].get(), &next[size_t(i)], 1, true, false});
      model.forward_batch(items);
      for (int i = 0; i < batch; ++i) next[size_t(i)] = argmax(items[size_t(i)].out);
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const dist::ExchangeStats x1 = dist::exchange_stats();
    const double tps = double(batch * decode_tokens) / s;
    if (first == 0) first = tps;
    out.push_back({{"batch", batch},
                   {"tokens_per_s", tps},
                   {"ratio_to_first", tps / first},
                   {"mode", "lockstep"},
                   {"ranks", dist::size()},
                   {"exchange_share", s > 0 ? (x1.seconds - x0.seconds) / s : 0.0},
                   {"exchange_bytes_per_step", double(x1.bytes_received - x0.bytes_received) / double(decode_tokens)}});
  }
  return out;
}

}  // namespace strata::cli
