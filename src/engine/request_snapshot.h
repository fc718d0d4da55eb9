// A request's full state in one file: its tokens, every cache of its sequence state in the
// storage formats of the model's cache specs (cache/cache_records.h: what each kind exports is
// its policy), its position and MTP progress, and its sampler (parameters, Philox key and
// counter, history) and stop matcher. Restored in the same or another process with the same
// model, the request continues exactly as it would have.
//
// Format: the 8 bytes "STRATARQ", then one CBOR document; float arrays are CBOR byte strings
// of little-endian fp32 (the hosts we run on), so a restore is bit-exact.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "cache/cache_records.h"

namespace strata::engine {

struct RequestSnapshot {
  uint64_t id = 0;
  std::vector<int32_t> tokens;  // prompt, then the generated tokens
  int64_t prompt_tokens = 0, cached_prompt_tokens = 0;
  bool has_state = false;       // false: waiting or preempted (recomputed after restore)
  std::string model_type;       // of the model that ran it (a clear error on another model)
  int64_t pos = 0;              // the state's position, MTP progress and caches
  std::vector<int64_t> mtp_pos;
  std::vector<float> mtp_hidden;
  std::vector<cache::CacheRecord> caches;
  std::vector<uint8_t> sampler;  // Sampler::to_bytes()
  std::vector<uint8_t> stops;    // StopMatcher::to_json() as CBOR
};

void write_snapshot(const std::string& path, const RequestSnapshot& s);
// Throws strata::Error for a missing, truncated or foreign file.
RequestSnapshot read_snapshot(const std::string& path);

}  // namespace strata::engine
