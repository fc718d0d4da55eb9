// config.json: any JSON an untrusted checkpoint may carry, through the architecture registry,
// the architecture's parser and everything the engine, `inspect` and `ledger` derive from a
// config without weights (facts, cache specs, workspace, decode traffic, description).
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "fuzz_input.h"
#include "models/registry.h"

namespace {
void derive(const strata::models::ModelConfig& c, const strata::models::CacheOptions& o) {
  const auto& f = c.facts();
  FUZZ_CHECK(f.layers >= 0 && f.vocab_size >= 0 && f.hidden_size >= 0, f.model_type);
  const auto layout = c.cache_layout(o);
  (void)c.ledger_variants(o);
  (void)c.workspace_bytes(4096, 2);
  (void)c.decode_traffic(4096);
  (void)c.prefill_flops_per_token();
  (void)layout;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strata::fuzz::Input in(data, size);
  const uint8_t options = in.byte();
  const std::string_view text = in.rest();
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return 0;
  try {
    const auto& arch = strata::models::architecture_of(j, "config.json");
    const auto config = arch.parse_config(j, "config.json");
    strata::models::CacheOptions o;
    o.fp4_index_keys = options & 1;
    o.include_mtp = options & 2;
    o.draft_tokens = (options >> 2) & 3;
    derive(*config, o);
    (void)config->describe();
    (void)config->describe_text();
  } catch (const strata::Error&) {
  }
  return 0;
}
