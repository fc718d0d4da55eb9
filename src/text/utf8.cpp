#include "text/utf8.h"

namespace strata {

namespace {
// Expected continuation count and the allowed range of the first continuation byte; the
// narrowed ranges exclude overlong forms, surrogates and code points above U+10FFFF.
struct Lead { int need; unsigned char lo, hi; };

Lead lead_of(unsigned char b) {
  if (b >= 0xC2 && b <= 0xDF) return {1, 0x80, 0xBF};
  if (b == 0xE0) return {2, 0xA0, 0xBF};
  if (b == 0xED) return {2, 0x80, 0x9F};
  if (b >= 0xE1 && b <= 0xEF) return {2, 0x80, 0xBF};
  if (b == 0xF0) return {3, 0x90, 0xBF};
  if (b == 0xF4) return {3, 0x80, 0x8F};
  if (b >= 0xF1 && b <= 0xF3) return {3, 0x80, 0xBF};
  return {-1, 0, 0};
}
}  // namespace

Utf8Char utf8_next(std::string_view s, size_t i) {
  auto b = static_cast<unsigned char>(s[i]);
  if (b < 0x80) return {b, 1, true};
  Lead l = lead_of(b);
  if (l.need < 0) return {0xFFFD, 1, false};
  char32_t cp = b & (0x3F >> l.need);
  size_t j = i + 1;
  for (int k = 0; k < l.need; ++k, ++j) {
    if (j >= s.size()) return {0xFFFD, static_cast<int>(j - i), false};
    auto c = static_cast<unsigned char>(s[j]);
    unsigned char lo = k == 0 ? l.lo : 0x80, hi = k == 0 ? l.hi : 0xBF;
    // The offending byte is not consumed: it may start the next character.
    if (c < lo || c > hi) return {0xFFFD, static_cast<int>(j - i), false};
    cp = (cp << 6) | (c & 0x3F);
  }
  return {cp, l.need + 1, true};
}

void utf8_append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

bool utf8_valid(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    if (static_cast<unsigned char>(s[i]) < 0x80) { ++i; continue; }
    Utf8Char c = utf8_next(s, i);
    if (!c.valid) return false;
    i += c.len;
  }
  return true;
}

std::string utf8_sanitize(std::string_view s) {
  if (utf8_valid(s)) return std::string(s);
  std::string out;
  out.reserve(s.size() + 8);
  for (size_t i = 0; i < s.size();) {
    Utf8Char c = utf8_next(s, i);
    if (c.valid) out.append(s.substr(i, c.len));
    else utf8_append(out, 0xFFFD);
    i += c.len;
  }
  return out;
}

size_t utf8_incomplete_tail(std::string_view s) {
  // A character is at most 4 bytes, so only a lead byte among the last 3 can be incomplete.
  size_t n = s.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    auto b = static_cast<unsigned char>(s[n - back]);
    if (b < 0x80) return 0;
    if (b >= 0xC0) {
      Utf8Char c = utf8_next(s, n - back);
      // Incomplete (ran off the end with every byte so far in range), not invalid.
      bool ran_off = !c.valid && static_cast<size_t>(c.len) == back && lead_of(b).need >= static_cast<int>(back);
      return ran_off ? back : 0;
    }
  }
  return 0;
}

}  // namespace strata
