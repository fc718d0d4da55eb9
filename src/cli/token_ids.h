// Parses "1,2,3" token-id lists for the CLI (logits, generate).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace strata::cli {

// Throws Error for empty lists, non-numbers and negative ids (vocab checks happen in the model).
std::vector<int64_t> parse_token_ids(const std::string& s);

}  // namespace strata::cli
