#include "models/expert_parallel.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "dist/world.h"
#include "io/safetensors.h"

namespace strata::models {
namespace {

int g_local_scopes = 0;

// bf16 values travel as their upper halves: exact for the bf16-rounded outputs of an expert.
void pack_rows(const float* src, int64_t n, std::vector<uint16_t>& to) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t b;
    std::memcpy(&b, src + i, 4);
    to.push_back(uint16_t(b >> 16));
  }
}

void unpack_rows(const uint16_t* src, int64_t n, float* to) {
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t b = uint32_t(src[i]) << 16;
    std::memcpy(to + i, &b, 4);
  }
}

}  // namespace

ExpertPlacement placement_at_load(int64_t experts) {
  return contiguous_placement(experts, g_local_scopes > 0 ? 1 : dist::size());
}

LocalExperts::LocalExperts() { ++g_local_scopes; }
LocalExperts::~LocalExperts() { --g_local_scopes; }

int computing_rank(const ExpertPlacement& p, int64_t expert, int64_t i) {
  const auto& h = p.holders[size_t(expert)];
  return h[size_t(i % int64_t(h.size()))];
}

void gather_expert_outputs(const ExpertPlacement& p, int rank, const std::vector<ExpertJob>& jobs, int64_t dim) {
  if (all_local(p)) return;
  if (p.ranks != dist::size())
    throw Error("expert outputs: placement over " + std::to_string(p.ranks) + " ranks in a job of " +
                std::to_string(dist::size()));
  std::vector<uint16_t> mine;
  for (const ExpertJob& j : jobs)
    for (int64_t i = 0; i < j.rows; ++i)
      if (computing_rank(p, j.expert, i) == rank) pack_rows(j.out + i * dim, dim, mine);
  std::vector<int64_t> sizes;
  const std::vector<uint8_t> all = dist::allgatherv(mine.data(), int64_t(mine.size() * 2), &sizes);
  // Each rank's rows in the same order it packed them.
  size_t at = 0;
  for (int r = 0; r < p.ranks; ++r) {
    const size_t end = at + size_t(sizes[size_t(r)]);
    for (const ExpertJob& j : jobs)
      for (int64_t i = 0; i < j.rows; ++i) {
        if (computing_rank(p, j.expert, i) != r) continue;
        if (at + size_t(dim) * 2 > end) throw Error("expert outputs: rank " + std::to_string(r) + " sent too few rows");
        if (r != rank) unpack_rows(reinterpret_cast<const uint16_t*>(all.data() + at), dim, j.out + i * dim);
        at += size_t(dim) * 2;
      }
    if (at != end) throw Error("expert outputs: rank " + std::to_string(r) + " sent more rows than its share");
  }
}

std::vector<RankShare> rank_shares(const SafetensorsCheckpoint& ckpt, int ranks) {
  if (ranks < 1) throw Error("rank shares: " + std::to_string(ranks) + " ranks");
  int64_t experts = 0;
  for (const TensorInfo* t : ckpt.all())
    if (auto e = routed_expert_of(t->name)) experts = std::max(experts, *e + 1);
  std::vector<RankShare> out;
  for (int r = 0; r < ranks; ++r) {
    RankShare s;
    s.rank = r;
    if (experts > 0) {
      const Shard sh = contiguous_shard(experts, ranks, r);
      s.first_expert = sh.first;
      s.experts = sh.count;
    }
    for (const auto& f : ckpt.files()) s.bytes += f->mapped().size();
    for (const TensorInfo* t : ckpt.all()) {
      const auto e = routed_expert_of(t->name);
      if (e && (*e < s.first_expert || *e >= s.first_expert + s.experts)) s.bytes -= t->nbytes;
    }
    out.push_back(s);
  }
  return out;
}

std::optional<int64_t> routed_expert_of(const std::string& tensor, const std::string& marker) {
  const size_t at = tensor.find(marker);
  if (at == std::string::npos) return std::nullopt;
  size_t i = at + marker.size();
  int64_t e = 0;
  bool digits = false;
  for (; i < tensor.size() && tensor[i] >= '0' && tensor[i] <= '9'; ++i) {
    e = e * 10 + (tensor[i] - '0');
    digits = true;
  }
  if (!digits || i >= tensor.size() || tensor[i] != '.') return std::nullopt;
  return e;
}

}  // namespace strata::models
