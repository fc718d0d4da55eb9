// String and number behaviour that the reference Jinja implementation (@huggingface/jinja)
// inherits from JavaScript, reproduced on UTF-8 strings: what counts as whitespace, lengths in
// UTF-16 units, number formatting and parsing, JSON string quoting, case mapping.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace strata::jinja {

// JavaScript's \s: ASCII tab to carriage return and space, U+00A0, U+1680, U+2000-U+200A,
// U+2028, U+2029, U+202F, U+205F, U+3000, U+FEFF.
bool js_is_space(char32_t c);

// String.prototype.trimStart / trimEnd / trim.
std::string_view js_trim_start(std::string_view s);
std::string_view js_trim_end(std::string_view s);
inline std::string_view js_trim(std::string_view s) { return js_trim_end(js_trim_start(s)); }

// Byte length of the JavaScript whitespace character at s[i], or 0.
size_t js_space_at(std::string_view s, size_t i);
// Byte length of the JavaScript whitespace character that ends s[0, end), or 0.
size_t js_space_before(std::string_view s, size_t end);

// String.prototype.length: UTF-16 code units (a character above U+FFFF counts twice).
size_t utf16_length(std::string_view s);

// The character at UTF-16 index i (negative counts from the end, as String.prototype.at);
// false when out of range. Half of a surrogate pair comes back as U+FFFD.
bool utf16_at(std::string_view s, long long i, std::string& out);

// Number.prototype.toString(): "1", "0.5", "1e+21", "1.5e-7", "NaN", "Infinity".
std::string js_number(double v);
// How the reference prints a float value: "-0.0", "2.0" for integral values, else js_number.
std::string js_float(double v);

// parseInt(s, 10) and parseFloat(s): leading whitespace, then the longest numeric prefix;
// NaN when there is none.
double js_parse_int(std::string_view s);
double js_parse_float(std::string_view s);
// Number(s), as the == operator converts a string: whole string, trimmed; "" is 0; NaN if not
// a number.
double js_string_to_number(std::string_view s);

// JSON.stringify(s), then with ensure_ascii every UTF-16 unit from U+007F up as \uXXXX.
void json_quote(std::string_view s, bool ensure_ascii, std::string& out);

// toUpperCase / toLowerCase by the Unicode simple case mappings (plus ß -> SS).
std::string js_upper(std::string_view s);
std::string js_lower(std::string_view s);
// The reference's title(): the first ASCII word character after a non-word character (or at
// the start) is upper-cased; nothing is lower-cased.
std::string js_title(std::string_view s);

}  // namespace strata::jinja
