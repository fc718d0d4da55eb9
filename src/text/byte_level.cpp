#include "text/byte_level.h"

#include <array>

#include "text/utf8.h"

namespace strata {
namespace {

struct Tables {
  std::array<char32_t, 256> to_cp{};
  std::array<int16_t, 324> to_byte{};  // mapped characters are all below U+0144
  Tables() {
    to_byte.fill(-1);
    auto printable = [](int b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); };
    int next = 0;
    for (int b = 0; b < 256; ++b) {
      to_cp[b] = printable(b) ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + next++);
      to_byte[to_cp[b]] = static_cast<int16_t>(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

char32_t byte_to_unicode(unsigned char b) { return tables().to_cp[b]; }

std::optional<unsigned char> unicode_to_byte(char32_t cp) {
  if (cp >= tables().to_byte.size() || tables().to_byte[cp] < 0) return std::nullopt;
  return static_cast<unsigned char>(tables().to_byte[cp]);
}

std::optional<std::string> byte_level_decode(std::string_view token) {
  std::string out;
  out.reserve(token.size());
  for (size_t i = 0; i < token.size();) {
    Utf8Char c = utf8_next(token, i);
    auto b = c.valid ? unicode_to_byte(c.cp) : std::nullopt;
    if (!b) return std::nullopt;
    out += static_cast<char>(*b);
    i += c.len;
  }
  return out;
}

std::string byte_level_encode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) utf8_append(out, byte_to_unicode(b));
  return out;
}

}  // namespace strata
