// GET /v1/ledger[?context=N]: the served model's cache memory per request against context,
// whole and by cache kind, for the web chat's chart (web_chat_page.h). The numbers are the
// engine's cache layout through CacheLayout::bytes_for, as `strata ledger` prints them (whole
// blocks), at 1K and every power of two up to the served maximum context, and at that maximum;
// with ?context=N also at N (the chart's mark for the conversation so far), so the page never
// computes a byte count itself.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cache/cache_spec.h"
#include "server/openai_response.h"

namespace strata::server {

// Ascending: lo (1024, or max_context / 16 when the maximum is not above 1K), the powers of two
// above it, and max_context.
std::vector<int64_t> ledger_contexts(int64_t max_context);

// ?context=N: an integer in [0, max_context], else ApiError 400 (param "context").
int64_t parse_ledger_context(const std::string& value, int64_t max_context);

// {"object": "ledger", "model", "max_context", "block_tokens", "bytes_per_token", "fixed_bytes",
//  "contexts": [n...], "bytes": [...], "by_kind": {kind: [...]}} and, given `at`,
//  "at": {"context", "bytes", "by_kind": {kind: bytes}}; the kinds' bytes sum to the whole's.
ojson ledger_json(const std::string& model_id, const cache::CacheLayout& layout, int64_t max_context,
                  std::optional<int64_t> at = std::nullopt);

}  // namespace strata::server
