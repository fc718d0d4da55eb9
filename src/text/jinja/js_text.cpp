#include "text/jinja/js_text.h"

#include <charconv>
#include <clocale>
#include <cmath>
#include <cstdio>
#include <cwctype>
#include <limits>
#include <locale.h>

#include "text/utf8.h"

namespace strata::jinja {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The decimal literal at the start of s (sign excluded): digits [. digits] [e [sign] digits],
// or . digits [exponent]. Returns its length, 0 if none.
size_t decimal_prefix(std::string_view s) {
  size_t i = 0;
  size_t int_digits = 0, frac_digits = 0;
  while (i < s.size() && is_digit(s[i])) ++i, ++int_digits;
  if (i < s.size() && s[i] == '.') {
    size_t j = i + 1;
    while (j < s.size() && is_digit(s[j])) ++j, ++frac_digits;
    if (int_digits + frac_digits > 0) i = j;
  }
  if (int_digits + frac_digits == 0) return 0;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    size_t j = i + 1;
    if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
    size_t k = j;
    while (k < s.size() && is_digit(s[k])) ++k;
    if (k > j) i = k;
  }
  return i;
}

double parse_decimal(std::string_view s) {
  double v = 0;
  // from_chars rejects a leading '.', which JavaScript accepts.
  std::string tmp(s);
  if (tmp.starts_with('.')) tmp.insert(0, 1, '0');
  auto r = std::from_chars(tmp.data(), tmp.data() + tmp.size(), v, std::chars_format::general);
  if (r.ec == std::errc::result_out_of_range) {
    // Overflow goes to infinity and underflow to zero, as in JavaScript.
    bool neg_exp = tmp.find("e-") != std::string::npos || tmp.find("E-") != std::string::npos;
    return neg_exp ? 0.0 : std::numeric_limits<double>::infinity();
  }
  return v;
}

// The signed numeric prefix parseFloat reads: [+-] (Infinity | decimal).
double parse_float_prefix(std::string_view s, bool whole) {
  double sign = 1;
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) sign = s[i++] == '-' ? -1 : 1;
  std::string_view rest = s.substr(i);
  if (rest.starts_with("Infinity")) {
    if (whole && rest.size() != 8) return kNaN;
    return sign * std::numeric_limits<double>::infinity();
  }
  size_t n = decimal_prefix(rest);
  if (n == 0 || (whole && n != rest.size())) return kNaN;
  return sign * parse_decimal(rest.substr(0, n));
}

locale_t utf8_locale() {
  static locale_t loc = [] {
    locale_t l = newlocale(LC_CTYPE_MASK, "C.UTF-8", locale_t(0));
    return l;
  }();
  return loc;
}

template <typename Map>
std::string map_chars(std::string_view s, Map map) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    Utf8Char c = utf8_next(s, i);
    i += size_t(c.len);
    map(c.cp, out);
  }
  return out;
}

}  // namespace

bool js_is_space(char32_t c) {
  if (c <= 32) return c == 32 || (c >= 9 && c <= 13);
  return c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000 || c == 0xFEFF;
}

size_t js_space_at(std::string_view s, size_t i) {
  if (i >= s.size()) return 0;
  Utf8Char c = utf8_next(s, i);
  return c.valid && js_is_space(c.cp) ? size_t(c.len) : 0;
}

size_t js_space_before(std::string_view s, size_t end) {
  if (end == 0) return 0;
  if (static_cast<unsigned char>(s[end - 1]) < 0x80) return js_is_space(char32_t(s[end - 1])) ? 1 : 0;
  // The non-ASCII JavaScript spaces are two (U+00A0) or three bytes long in UTF-8.
  for (size_t n : {size_t(2), size_t(3)}) {
    if (end < n) continue;
    Utf8Char c = utf8_next(s, end - n);
    if (c.valid && size_t(c.len) == n && js_is_space(c.cp)) return n;
  }
  return 0;
}

std::string_view js_trim_start(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    Utf8Char c = utf8_next(s, i);
    if (!c.valid || !js_is_space(c.cp)) break;
    i += size_t(c.len);
  }
  return s.substr(i);
}

std::string_view js_trim_end(std::string_view s) {
  size_t end = s.size();
  while (size_t n = js_space_before(s, end)) end -= n;
  return s.substr(0, end);
}

size_t utf16_length(std::string_view s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size();) {
    Utf8Char c = utf8_next(s, i);
    i += size_t(c.len);
    n += c.cp > 0xFFFF ? 2 : 1;
  }
  return n;
}

bool utf16_at(std::string_view s, long long i, std::string& out) {
  const long long len = static_cast<long long>(utf16_length(s));
  if (i < 0) i += len;
  if (i < 0 || i >= len) return false;
  long long unit = 0;
  for (size_t p = 0; p < s.size();) {
    Utf8Char c = utf8_next(s, p);
    const long long w = c.cp > 0xFFFF ? 2 : 1;
    if (i < unit + w) {
      out.clear();
      utf8_append(out, w == 2 ? char32_t(0xFFFD) : c.cp);
      return true;
    }
    unit += w;
    p += size_t(c.len);
  }
  return false;
}

std::string js_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  if (v == 0) return "0";
  if (v < 0) return js_number(-v).insert(0, 1, '-');
  // The shortest digits that round-trip, as ECMAScript's Number::toString picks them.
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string_view sci(buf, size_t(r.ptr - buf));
  const size_t e_at = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e_at))
    if (c != '.') digits += c;
  int exp10 = 0;
  std::from_chars(sci.data() + e_at + 1 + (sci[e_at + 1] == '+' ? 1 : 0), sci.data() + sci.size(), exp10);
  const int k = int(digits.size()), n = exp10 + 1;
  if (k <= n && n <= 21) return digits + std::string(size_t(n - k), '0');
  if (0 < n && n <= 21) return digits.substr(0, size_t(n)) + "." + digits.substr(size_t(n));
  if (-6 < n && n <= 0) return "0." + std::string(size_t(-n), '0') + digits;
  std::string out = digits.substr(0, 1);
  if (k > 1) out.append(1, '.').append(digits, 1);
  out += n - 1 >= 0 ? "e+" : "e-";
  out += std::to_string(std::abs(n - 1));
  return out;
}

std::string js_float(double v) {
  if (v == 0 && std::signbit(v)) return "-0.0";
  if (std::isfinite(v) && std::fmod(v, 1.0) == 0) {
    // toFixed(1), which falls back to toString from 1e21 on.
    if (std::fabs(v) >= 1e21) return js_number(v);
    char buf[400];
    std::snprintf(buf, sizeof buf, "%.1f", v);
    return buf;
  }
  return js_number(v);
}

double js_parse_int(std::string_view s) {
  s = js_trim_start(s);
  double sign = 1;
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) sign = s[i++] == '-' ? -1 : 1;
  size_t j = i;
  while (j < s.size() && is_digit(s[j])) ++j;
  if (j == i) return kNaN;
  return sign * parse_decimal(s.substr(i, j - i));
}

double js_parse_float(std::string_view s) { return parse_float_prefix(js_trim_start(s), false); }

double js_string_to_number(std::string_view s) {
  s = js_trim(s);
  if (s.empty()) return 0;
  if (s.size() > 2 && s[0] == '0') {
    int base = s[1] == 'x' || s[1] == 'X' ? 16 : s[1] == 'o' || s[1] == 'O' ? 8 : s[1] == 'b' || s[1] == 'B' ? 2 : 0;
    if (base) {
      double v = 0;
      for (char c : s.substr(2)) {
        int d = is_digit(c) ? c - '0' : (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (c | 0x20) - 'a' + 10 : 99;
        if (d >= base) return kNaN;
        v = v * base + d;
      }
      return v;
    }
  }
  return parse_float_prefix(s, true);
}

void json_quote(std::string_view s, bool ensure_ascii, std::string& out) {
  static const char kHex[] = "0123456789abcdef";
  auto unit = [&](unsigned u) {
    out += "\\u";
    for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(u >> shift) & 0xF];
  };
  out += '"';
  for (size_t i = 0; i < s.size();) {
    Utf8Char c = utf8_next(s, i);
    const std::string_view raw = s.substr(i, size_t(c.len));
    i += size_t(c.len);
    switch (c.cp) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      default: break;
    }
    if (c.cp < 0x20) {
      unit(c.cp);
    } else if (ensure_ascii && c.cp >= 0x7F) {
      if (c.cp > 0xFFFF) {
        unit(0xD800 + ((c.cp - 0x10000) >> 10));
        unit(0xDC00 + ((c.cp - 0x10000) & 0x3FF));
      } else {
        unit(c.cp);
      }
    } else if (c.valid) {
      out += raw;
    } else {
      utf8_append(out, 0xFFFD);
    }
  }
  out += '"';
}

std::string js_upper(std::string_view s) {
  locale_t loc = utf8_locale();
  return map_chars(s, [loc](char32_t c, std::string& out) {
    if (c < 0x80) {
      out += c >= 'a' && c <= 'z' ? char(c - 32) : char(c);
    } else if (c == 0xDF) {
      out += "SS";
    } else {
      utf8_append(out, loc ? char32_t(towupper_l(wint_t(c), loc)) : c);
    }
  });
}

std::string js_lower(std::string_view s) {
  locale_t loc = utf8_locale();
  return map_chars(s, [loc](char32_t c, std::string& out) {
    if (c < 0x80) {
      out += c >= 'A' && c <= 'Z' ? char(c + 32) : char(c);
    } else if (c == 0x130) {
      out += "i\xCC\x87";  // İ lower-cases to i + combining dot above
    } else {
      utf8_append(out, loc ? char32_t(towlower_l(wint_t(c), loc)) : c);
    }
  });
}

std::string js_title(std::string_view s) {
  auto word = [](unsigned char c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z' ? true : is_digit(char(c)) || c == '_'; };
  std::string out(s);
  bool prev_word = false;
  for (char& ch : out) {
    const auto c = static_cast<unsigned char>(ch);
    const bool w = word(c);
    if (w && !prev_word && c >= 'a' && c <= 'z') ch = char(c - 32);
    prev_word = w;
  }
  return out;
}

}  // namespace strata::jinja
