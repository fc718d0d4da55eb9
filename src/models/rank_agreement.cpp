#include "models/rank_agreement.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/numerics.h"
#include "dist/world.h"
#include "io/safetensors.h"

namespace strata::models {
namespace {

// The wire format of gather_expert_outputs; a change there must change this.
constexpr const char* kBuild = "strata 0.1.0 expert-exchange 1";

uint64_t fnv1a(uint64_t h, const std::string& s) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string hex(uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", (unsigned long long)v);
  return b;
}

}  // namespace

std::string checkpoint_identity(const std::string& config_json_path, const Model& m) {
  std::ifstream f(config_json_path, std::ios::binary);
  std::stringstream config;
  config << f.rdbuf();
  uint64_t tensors = 14695981039346656037ull;
  int64_t count = 0;
  for (const TensorInfo* t : m.checkpoint().all()) {
    std::string line = t->name + "|" + std::to_string(int(t->dtype)) + "|" + t->shape_str() + "|" +
                       std::to_string(t->offset) + "|" + std::to_string(t->nbytes) + "|" + std::to_string(t->shard);
    tensors = fnv1a(tensors, line);
    ++count;
  }
  return std::string(kBuild) + ", numerics " + std::string(numerics_name(active_numerics())) + ", config.json " +
         hex(fnv1a(14695981039346656037ull, config.str())) + ", " + std::to_string(count) + " tensors " + hex(tensors);
}

void require_same_model_on_all_ranks(const std::string& config_json_path, const Model& m) {
  if (dist::size() == 1) return;
  if (!m.expert_parallel())
    throw Error("model type " + m.facts().model_type + " runs in one process: expert parallelism over " +
                std::to_string(dist::size()) + " ranks is implemented for deepseek_v4");
  dist::check_same_on_all_ranks("model", checkpoint_identity(config_json_path, m));
}

}  // namespace strata::models
