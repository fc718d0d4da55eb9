#include "engine/philox.h"

namespace strata {

namespace {

constexpr uint32_t kM0 = 0xD2511F53, kM1 = 0xCD9E8D57;  // round multipliers
constexpr uint32_t kW0 = 0x9E3779B9, kW1 = 0xBB67AE85;  // Weyl key increments

}  // namespace

std::array<uint32_t, 4> philox4x32_10(PhiloxCounter c, PhiloxKey k) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k[0] += kW0;
      k[1] += kW1;
    }
    uint64_t p0 = uint64_t(kM0) * c[0];
    uint64_t p1 = uint64_t(kM1) * c[2];
    c = {uint32_t(p1 >> 32) ^ c[1] ^ k[0], uint32_t(p1), uint32_t(p0 >> 32) ^ c[3] ^ k[1],
         uint32_t(p0)};
  }
  return c;
}

double philox_uniform(uint64_t key, uint64_t index) {
  auto r = philox4x32_10({uint32_t(index), uint32_t(index >> 32), 0, 0},
                         {uint32_t(key), uint32_t(key >> 32)});
  uint64_t bits = ((uint64_t(r[0]) << 32) | r[1]) >> 11;
  return double(bits) * 0x1p-53;
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t request_rng_key(std::optional<uint64_t> seed, uint64_t request_id) {
  return seed ? splitmix64(*seed) : splitmix64(request_id ^ 0xA5A5A5A55A5A5A5Aull);
}

}  // namespace strata
