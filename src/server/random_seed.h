// The seed of a request that sends none: a fresh random one, as vLLM and OpenAI sample (and as
// the CLI does). A client that wants the same text again sends a seed.
#pragma once
#include <cstdint>
#include <random>

namespace strata::server {

inline uint64_t random_seed() {
  std::random_device rd;
  return uint64_t(rd()) << 32 | rd();
}

}  // namespace strata::server
