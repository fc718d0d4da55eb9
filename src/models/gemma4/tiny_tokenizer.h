// A tokenizer for the tiny presets' 512-token vocabulary, in Gemma's layout (SentencePiece-style
// BPE: " " → "▁", byte fallback <0x00>..<0xFF>, Gemma's turn markers and a chat template of
// that shape), so that a tiny checkpoint runs through generate, chat and serve like a real one.
#pragma once
#include <cstdint>
#include <string>

namespace strata::gemma4 {

// Special ids: <pad> 0, <eos> 1, <bos> 2, <unk> 3, <start_of_turn> 4, <end_of_turn> 5.
constexpr int64_t kTinyEndOfTurn = 5;

// Writes tokenizer.json and tokenizer_config.json for `vocab` (>= 512) ids into dir.
void write_tiny_tokenizer(const std::string& dir, int64_t vocab);

}  // namespace strata::gemma4
