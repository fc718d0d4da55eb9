#include "models/deepseek_v4/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/huge_buffer.h"
#include "core/numfmt.h"
#include "kernels/dot.h"
#include "kernels/parallel.h"
#include "kernels/quant.h"
#include "kernels/rmsnorm.h"
#include "kernels/sparse_attention.h"

namespace strata::dsv4 {

using std::vector;

void init_layer_state(const AttentionSpec& s, LayerState& st, IndexKeyFormat index_keys) {
  st.window = s.window;
  st.head_dim = s.head_dim;
  st.codec = EntryCodec::kv(s.head_dim, s.rope_dim);
  st.ring.assign(size_t(s.window * st.codec.bytes()), 0);
  if (s.ratio > 0) st.compressor.init(s.ratio, st.codec);
  if (s.ratio == 4) st.index_keys.init(s.ratio, EntryCodec::index(s.indexer.head_dim, index_keys));
}

void rescale_heads(float* q, int64_t heads, int64_t hd, float eps) {
  // q *= rsqrt(q.square().mean(-1) + eps) on a bf16 tensor: every step rounds to bf16
  vector<float> sq(static_cast<size_t>(hd));
  for (int64_t h = 0; h < heads; ++h) {
    float* qh = q + h * hd;
    for (int64_t i = 0; i < hd; ++i) sq[size_t(i)] = round_bf16(qh[i] * qh[i]);
    float sum = 0.0f;
    {
      double l[kernels::kDotLanes] = {};
      for (int64_t i = 0; i < hd; ++i) l[i % kernels::kDotLanes] += sq[size_t(i)];
      sum = float(kernels::fold16(l));  // fp64 sum rounded once (see sum_squares)
    }
    float mean = round_bf16(sum / float(hd));
    float r = round_bf16(float(1.0 / std::sqrt(double(round_bf16(mean + eps)))));
    for (int64_t i = 0; i < hd; ++i) qh[i] = round_bf16(qh[i] * r);
  }
}

void finish_window_entry(const AttentionWeights& w, const AttentionSpec& s, float* kv, int64_t pos) {
  kernels::rms_norm(kv, w.kv_norm, s.head_dim, s.norm_eps, kv);
  s.rope->apply(kv + s.head_dim - s.rope_dim, pos);
  // FP8-simulate the NoPE dims (QAT); RoPE dims stay bf16
  kernels::fake_quant_fp8(kv, s.head_dim - s.rope_dim, 64);
}

void attention_forward(const AttentionWeights& w, const AttentionSpec& s, LayerState& st, const float* x, int64_t rows,
                       int64_t pos0, float* out) {
  attention_forward(w, s, {AttentionSegment{&st, pos0, rows}}, x, out);
}

void attention_forward(const AttentionWeights& w, const AttentionSpec& s, const std::vector<AttentionSegment>& segs,
                       const float* x, float* out) {
  const int64_t d = s.dim, H = s.heads, hd = s.head_dim, rd = s.rope_dim, ql = s.q_lora_rank;
  int64_t rows = 0;
  for (const auto& g : segs) rows += g.rows;
  vector<int64_t> pos_of(static_cast<size_t>(rows));
  vector<LayerState*> st_of(static_cast<size_t>(rows));
  vector<cache::UndoLog*> undo_of(static_cast<size_t>(rows));
  vector<const IndexerScratch*> scratch_of(static_cast<size_t>(rows));
  {
    int64_t r = 0;
    for (const auto& g : segs)
      for (int64_t k = 0; k < g.rows; ++k, ++r)
        pos_of[size_t(r)] = g.pos0 + k, st_of[size_t(r)] = g.state, undo_of[size_t(r)] = g.undo,
        scratch_of[size_t(r)] = g.indexer_scratch;
  }
  // --- batched projections (each row independent) ---
  vector<float> qr(size_t(rows * ql)), kv(size_t(rows * hd));
  CallBuffer<float> q(size_t(rows * H * hd));  // written whole by wq_b
  kernels::linear(w.wq_a, x, rows, qr.data(), true);
  for (int64_t r = 0; r < rows; ++r) kernels::rms_norm(qr.data() + r * ql, w.q_norm, ql, s.norm_eps, qr.data() + r * ql);
  kernels::linear(w.wq_b, qr.data(), rows, q.data(), true);
  kernels::linear(w.wkv, x, rows, kv.data(), true);
  for (int64_t r = 0; r < rows; ++r) {
    float* qrow = q.data() + r * H * hd;
    rescale_heads(qrow, H, hd, s.norm_eps);
    for (int64_t h = 0; h < H; ++h) s.rope->apply(qrow + h * hd + hd - rd, pos_of[size_t(r)]);
    finish_window_entry(w, s, kv.data() + r * hd, pos_of[size_t(r)]);
  }
  const int64_t cw = s.ratio == 4 ? 2 * hd : hd;
  vector<float> ckv, cscore, iq, iw, ikv, iscore;
  if (s.ratio > 0) {
    ckv.resize(size_t(rows * cw));
    cscore.resize(size_t(rows * cw));
    compressor_project(w.compressor, s.compressor, x, rows, ckv.data(), cscore.data());
  }
  const IndexerSpec& is = s.indexer;
  if (s.ratio == 4) {
    iq.resize(size_t(rows * is.heads * is.head_dim));
    iw.resize(size_t(rows * is.heads));
    ikv.resize(size_t(rows * 2 * is.head_dim));
    iscore.resize(size_t(rows * 2 * is.head_dim));
    // one wq_b product for every sequence's rows (per sequence, a batch of 8 decode rows read
    // the 8 MB weight 8 times a step), each row rotated at its own position
    indexer_queries(w.indexer, is, qr.data(), rows, pos_of.data(), iq.data());
    indexer_weights(w.indexer, is, x, rows, iw.data());
    compressor_project(w.indexer.compressor, is.compressor, x, rows, ikv.data(), iscore.data());
  }

  // --- token by token against the evolving state ---
  // The state's writes run in row order (each row's kv into the window ring, the compressors'
  // steps, the indexer's choice), and the packed bytes of the entries each row sees are copied
  // right then, before a later row's write reuses a ring slot. The attention itself, which only
  // reads those entries, then runs a row per thread over a chunk of rows, each unpacking its
  // row's copies into fp32 in its own cache: one row at a time with its heads split over the
  // threads waited on the pool at every row (flash-tiny's small heads spent most of a
  // prefill's attention there), and unpacking on the calling thread left the others idle. A
  // chunk holds ~kChunkBytes of packed entries (unpacked fp32 chunks of 32 MB, read back from
  // memory, were slower than the head split) and at least two rows; a single row (decode)
  // keeps the head split. The same bits either way: each row's attention is computed whole by
  // one thread, from the same stored values.
  constexpr size_t kChunkBytes = size_t(1) << 20;
  CallBuffer<float> o(size_t(rows * H * hd));  // every row's heads written by its attention
  // thread_local: a step would otherwise fault in fresh pages per layer
  thread_local vector<uint8_t> copies;
  if (rows == 0) return;
  const size_t eb = size_t(st_of[0]->codec.bytes());  // one kv codec for window and compressed entries
  vector<const uint8_t*> packed;
  vector<size_t> first(size_t(rows) + 1);  // each chunk row's first entry in `copies`
  const float scale = float(std::pow(double(hd), -0.5));
  {  // room for a chunk up front: growing it row by row copied and re-faulted it
    int64_t last = 0;
    for (int64_t r = 0; r < rows; ++r) last = std::max(last, pos_of[size_t(r)]);
    const int64_t per_row = s.window + (s.ratio == 4 ? is.topk : s.ratio > 0 ? (last + 1) / s.ratio : 0);
    const size_t row_bytes = size_t(per_row) * eb;
    copies.reserve(std::min(size_t(rows) * row_bytes, std::max(kChunkBytes, row_bytes) + row_bytes));
  }
  for (int64_t r0 = 0; r0 < rows;) {
    int64_t r1 = r0;
    size_t used = 0;  // entries
    while (r1 < rows && (r1 - r0 < 2 || used * eb < kChunkBytes)) {
      const int64_t r = r1++;
      const int64_t pos = pos_of[size_t(r)];
      LayerState& st = *st_of[size_t(r)];
      cache::UndoLog* undo = undo_of[size_t(r)];
      uint8_t* slot = st.window_slot(pos);
      cache::save_before_write(undo, pos, slot, size_t(st.codec.bytes()));
      st.codec.pack(kv.data() + r * hd, slot);
      packed.clear();
      for (int64_t p = std::max<int64_t>(0, pos - s.window + 1); p <= pos; ++p) packed.push_back(st.window_entry(p));
      if (s.ratio > 0) {
        compressor_step(w.compressor, s.compressor, st.compressor, ckv.data() + r * cw, cscore.data() + r * cw, pos, undo);
        const int64_t visible = (pos + 1) / s.ratio;
        if (s.ratio == 4) {
          compressor_step(w.indexer.compressor, is.compressor, st.index_keys, ikv.data() + r * 2 * is.head_dim,
                          iscore.data() + r * 2 * is.head_dim, pos, undo);
          for (int64_t i : indexer_select(is, iq.data() + r * is.heads * is.head_dim, iw.data() + r * is.heads,
                                          st.index_keys, visible, scratch_of[size_t(r)]))
            packed.push_back(st.compressor.entry(i));
        } else {
          for (int64_t i = 0; i < visible; ++i) packed.push_back(st.compressor.entry(i));
        }
      }
      first[size_t(r - r0)] = used;
      used += packed.size();
      if (copies.size() < used * eb) copies.resize(used * eb);
      for (size_t e = 0; e < packed.size(); ++e) std::memcpy(copies.data() + (first[size_t(r - r0)] + e) * eb, packed[e], eb);
    }
    first[size_t(r1 - r0)] = used;
    // through a pointer: inside the job, `copies` would name the worker's own (empty) buffer
    const uint8_t* chunk = copies.data();
    kernels::parallel_for_dynamic(r1 - r0, 1, 1, [&](int64_t b, int64_t e) {
      thread_local vector<float> values;  // this thread's row, unpacked
      vector<const float*> entries;
      for (int64_t i = b; i < e; ++i) {
        const int64_t r = r0 + i, n = int64_t(first[size_t(i) + 1] - first[size_t(i)]);
        if (values.size() < size_t(n * hd)) values.resize(size_t(n * hd));
        entries.resize(size_t(n));
        for (int64_t j = 0; j < n; ++j) {
          st_of[size_t(r)]->codec.unpack(chunk + (first[size_t(i)] + size_t(j)) * eb, values.data() + j * hd);
          entries[size_t(j)] = values.data() + j * hd;
        }
        float* orow = o.data() + r * H * hd;
        kernels::sparse_attention(q.data() + r * H * hd, H, hd, entries.data(), n, w.attn_sink, scale, orow);
        for (int64_t h = 0; h < H; ++h) s.rope->apply(orow + h * hd + hd - rd, pos_of[size_t(r)], true);
      }
    });
    r0 = r1;
  }

  // --- grouped low-rank output: each group's heads through its own wo_a slice, then wo_b ---
  const int64_t G = s.groups, ol = s.o_lora_rank, gin = H * hd / G;
  // One product per group over all rows (the group's slices gathered into a matrix): per row
  // and group, each of a prefill's rows read the whole 67 MB wo_a from memory (~20% of a
  // 384-token flash-2l prefill). Every output is the same canonical dot either way.
  vector<float> og(size_t(rows * G * ol));
  vector<float> xg(size_t(rows * gin)), yg(size_t(rows * ol));
  for (int64_t g = 0; g < G; ++g) {
    const kernels::LinearWeight wg = kernels::weight_rows(w.wo_a_view(), g * ol, ol);
    for (int64_t r = 0; r < rows; ++r)
      std::copy_n(o.data() + r * H * hd + g * gin, gin, xg.data() + r * gin);
    kernels::linear(wg, xg.data(), rows, yg.data(), true);
    for (int64_t r = 0; r < rows; ++r) std::copy_n(yg.data() + r * ol, ol, og.data() + (r * G + g) * ol);
  }
  kernels::linear(w.wo_b, og.data(), rows, out, true);
  (void)d;
}

}  // namespace strata::dsv4
