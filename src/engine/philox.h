// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11): a
// counter-based generator. Output is a pure function of (key, counter), so a request's random
// stream is fixed by its seed and by how many tokens it has sampled — nothing else: batching,
// thread count, preemption and save/restore cannot change it, and the whole RNG state is two
// integers.
#pragma once
#include <array>
#include <cstdint>
#include <optional>

namespace strata {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

// One block of 4 random words (the Random123 reference function philox4x32 with R = 10).
std::array<uint32_t, 4> philox4x32_10(PhiloxCounter ctr, PhiloxKey key);

// Uniform double in [0, 1) with 53 random bits for draw number `index` of stream `key`.
double philox_uniform(uint64_t key, uint64_t index);

// splitmix64's finalizer: a bijective mixer used to turn seeds and request ids into keys.
uint64_t splitmix64(uint64_t x);

// The Philox key of a request: from its seed when it has one (so the same seed gives the same
// text whatever the request id), otherwise from its request id. Seeded and unseeded keys are
// mixed with different constants so that seed N and request id N give unrelated streams.
uint64_t request_rng_key(std::optional<uint64_t> seed, uint64_t request_id);

}  // namespace strata
