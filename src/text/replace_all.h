// Every occurrence of a literal string replaced, left to right, without overlaps: the
// Replace step of tokenizer.json normalizers and decoders (SentencePiece's " " <-> "▁").
#pragma once
#include <string>
#include <string_view>

namespace strata {

std::string replace_all(std::string_view s, std::string_view from, std::string_view to);

}  // namespace strata
