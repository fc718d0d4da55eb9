#include "text/added_tokens.h"

#include <algorithm>

#include "text/regex.h"
#include "text/utf8.h"

namespace strata {

bool is_js_space(char32_t c) {
  return c == 0x09 || c == 0x0A || c == 0x0B || c == 0x0C || c == 0x0D || c == 0x20 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000 || c == 0xFEFF;
}

namespace {

// Start of the white-space run that ends at `end`.
size_t space_run_before(std::string_view s, size_t end) {
  size_t i = end;
  while (i > 0) {
    size_t j = i - 1;
    while (j > 0 && (static_cast<unsigned char>(s[j]) & 0xC0) == 0x80) --j;
    if (!is_js_space(utf8_next(s, j).cp)) break;
    i = j;
  }
  return i;
}

// End of the white-space run that starts at `begin`.
size_t space_run_after(std::string_view s, size_t begin) {
  size_t i = begin;
  while (i < s.size()) {
    Utf8Char c = utf8_next(s, i);
    if (!is_js_space(c.cp)) break;
    i += c.len;
  }
  return i;
}

// A word character as in Rust's regex \w (letters, marks, digits, connector punctuation,
// joiners): single_word tokens must not touch one.
bool is_word_char(std::string_view one_char) {
  static const Regex word(R"([\p{L}\p{M}\p{N}\p{Pc}\x{200C}\x{200D}])");
  return word.search(one_char);
}

std::string_view char_before(std::string_view s, size_t end) {
  if (end == 0) return {};
  size_t j = end - 1;
  while (j > 0 && (static_cast<unsigned char>(s[j]) & 0xC0) == 0x80) --j;
  return s.substr(j, end - j);
}

std::string_view char_at(std::string_view s, size_t i) {
  if (i >= s.size()) return {};
  return s.substr(i, utf8_next(s, i).len);
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(const std::vector<const AddedToken*>& tokens,
                                     const std::vector<std::string>& contents)
    : tokens_(tokens) {
  for (size_t t = 0; t < tokens.size(); ++t) {
    const std::string& c = contents[t];
    if (c.empty()) continue;
    first_byte_[static_cast<unsigned char>(c[0])] = true;
    int32_t node = 0;
    for (unsigned char b : c) {
      int32_t nx = child(node, b);
      if (nx < 0) {
        nx = static_cast<int32_t>(nodes_.size());
        nodes_.emplace_back();
        auto& v = nodes_[node].next;
        v.insert(std::lower_bound(v.begin(), v.end(), std::make_pair(b, int32_t{0})), {b, nx});
      }
      node = nx;
    }
    // The first of several tokens with the same content wins.
    if (nodes_[node].token < 0) nodes_[node].token = static_cast<int32_t>(t);
  }
}

int32_t AddedTokenMatcher::child(int32_t node, unsigned char b) const {
  const auto& v = nodes_[node].next;
  auto it = std::lower_bound(v.begin(), v.end(), std::make_pair(b, int32_t{0}));
  return it != v.end() && it->first == b ? it->second : -1;
}

void AddedTokenMatcher::split(std::string_view text, std::vector<Segment>& out) const {
  size_t emitted = 0;  // end of what has been handed out
  size_t i = 0;
  while (i < text.size()) {
    if (!first_byte_[static_cast<unsigned char>(text[i])]) { ++i; continue; }
    int32_t node = 0, best = -1;
    size_t best_end = 0;
    for (size_t j = i; j < text.size(); ++j) {
      node = child(node, static_cast<unsigned char>(text[j]));
      if (node < 0) break;
      if (nodes_[node].token >= 0) { best = nodes_[node].token; best_end = j + 1; }
    }
    if (best < 0) { ++i; continue; }
    const AddedToken& tok = *tokens_[best];
    size_t start = i, stop = best_end;
    if (tok.single_word) {
      auto before = char_before(text, start), after = char_at(text, stop);
      bool ok = (before.empty() || !is_word_char(before)) && (after.empty() || !is_word_char(after));
      if (!ok) { i = stop; continue; }  // the rejected text stays text
    }
    if (tok.lstrip) start = std::max(space_run_before(text, start), emitted);
    if (tok.rstrip) stop = space_run_after(text, stop);
    if (start > emitted) out.push_back({text.substr(emitted, start - emitted), -1});
    out.push_back({{}, tok.id});
    emitted = i = stop;
  }
  if (emitted < text.size()) out.push_back({text.substr(emitted), -1});
}

}  // namespace strata
