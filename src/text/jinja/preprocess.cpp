#include "text/jinja/preprocess.h"

#include "text/jinja/js_text.h"

namespace strata::jinja {
namespace {

void copy(const MappedText& in, size_t from, size_t to, MappedText& out) {
  out.text.append(in.text, from, to - from);
  out.origin.insert(out.origin.end(), in.origin.begin() + long(from), in.origin.begin() + long(to));
}

// JavaScript's multiline ^: the start, or after \n, \r, U+2028 or U+2029.
bool line_start(std::string_view s, size_t i) {
  if (i == 0) return true;
  if (s[i - 1] == '\n' || s[i - 1] == '\r') return true;
  return i >= 3 && s.substr(i - 3, 2) == "\xE2\x80" && (s[i - 1] == '\xA8' || s[i - 1] == '\xA9');
}

MappedText lstrip_blocks(const MappedText& in) {
  std::string_view s = in.text;
  MappedText out;
  size_t i = 0, copied = 0;
  while (i < s.size()) {
    if (line_start(s, i)) {
      size_t j = i;
      while (j < s.size() && (s[j] == ' ' || s[j] == '\t')) ++j;
      if (j > i && j + 1 < s.size() && s[j] == '{' && (s[j + 1] == '#' || s[j + 1] == '%' || s[j + 1] == '-')) {
        copy(in, copied, i, out);
        copied = j;
        i = j;
        continue;
      }
    }
    ++i;
  }
  copy(in, copied, s.size(), out);
  return out;
}

MappedText trim_blocks(const MappedText& in) {
  std::string_view s = in.text;
  MappedText out;
  size_t copied = 0;
  for (size_t i = 0; i + 2 < s.size(); ++i) {
    if ((s[i] == '#' || s[i] == '%' || s[i] == '-') && s[i + 1] == '}' && s[i + 2] == '\n') {
      copy(in, copied, i + 2, out);
      copied = i + 3;
      i += 2;
    }
  }
  copy(in, copied, s.size(), out);
  return out;
}

size_t skip_spaces(std::string_view s, size_t i) {
  while (size_t n = js_space_at(s, i)) i += n;
  return i;
}

// Matches {%-? \s* (end)?generation \s* -?%} \s* at i; returns its end, or 0.
size_t generation_tag(std::string_view s, size_t i, bool& lstrip, bool& rstrip, size_t& after) {
  if (s.substr(i, 2) != "{%") return 0;
  size_t j = i + 2;
  lstrip = j < s.size() && s[j] == '-';
  if (lstrip) ++j;
  j = skip_spaces(s, j);
  if (s.substr(j, 3) == "end") j += 3;
  if (s.substr(j, 10) != "generation") return 0;
  j = skip_spaces(s, j + 10);
  rstrip = j < s.size() && s[j] == '-';
  if (rstrip) ++j;
  if (s.substr(j, 2) != "%}") return 0;
  after = j + 2;
  return skip_spaces(s, after);
}

MappedText strip_generation_tags(const MappedText& in) {
  std::string_view s = in.text;
  MappedText out;
  size_t last = 0;
  for (size_t i = s.find("{%"); i != std::string_view::npos; i = s.find("{%", i + 1)) {
    bool lstrip = false, rstrip = false;
    size_t after = 0;
    const size_t end = generation_tag(s, i, lstrip, rstrip, after);
    if (!end) continue;
    size_t keep_to = i;
    while (lstrip && keep_to > last)
      if (size_t n = js_space_before(s, keep_to)) keep_to -= n;
      else break;
    copy(in, last, keep_to, out);
    if (!rstrip) copy(in, after, end, out);
    last = end;
    i = end - 1;
  }
  copy(in, last, s.size(), out);
  return out;
}

}  // namespace

MappedText preprocess(std::string_view source) {
  MappedText m;
  m.text = source;
  m.origin.resize(source.size());
  for (size_t i = 0; i < source.size(); ++i) m.origin[i] = uint32_t(i);
  if (m.text.ends_with('\n')) {
    m.text.pop_back();
    m.origin.pop_back();
  }
  return strip_generation_tags(trim_blocks(lstrip_blocks(m)));
}

}  // namespace strata::jinja
