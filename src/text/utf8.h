// UTF-8 decoding and encoding with the WHATWG (TextDecoder) treatment of invalid input:
// each maximal ill-formed subpart becomes one U+FFFD, so strata and the JavaScript and Rust
// reference tokenizers see the same characters for the same bytes.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace strata {

struct Utf8Char {
  char32_t cp;   // U+FFFD when !valid
  int len;       // bytes consumed (>= 1 unless at end of input)
  bool valid;
};

// Decodes the character at s[i] (i < s.size()).
Utf8Char utf8_next(std::string_view s, size_t i);
void utf8_append(std::string& out, char32_t cp);
bool utf8_valid(std::string_view s);
// s with every maximal ill-formed subpart replaced by U+FFFD (returns s unchanged if valid).
std::string utf8_sanitize(std::string_view s);
// Number of bytes at the end of s that start a character which is valid so far but not yet
// complete (0..3): the bytes a streaming decoder must hold back.
size_t utf8_incomplete_tail(std::string_view s);

}  // namespace strata
