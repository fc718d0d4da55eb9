#include "text/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cstdio>

#include "core/error.h"
#include "text/utf8.h"

namespace strata {

namespace {

// JavaScript's \s: WhiteSpace plus LineTerminator (ECMA-262). It differs from PCRE2's and
// Rust's sets (U+0085 is not in it; U+FEFF is).
constexpr const char* kJsSpace =
    "\\t\\n\\x{0B}\\f\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}"
    "\\x{3000}\\x{FEFF}";

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool is_ascii_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

struct MatchState {
  pcre2_match_data* md = nullptr;
  pcre2_match_context* mc = nullptr;
  pcre2_jit_stack* js = nullptr;
  MatchState() {
    md = pcre2_match_data_create(1, nullptr);
    mc = pcre2_match_context_create(nullptr);
    js = pcre2_jit_stack_create(32 * 1024, 4 * 1024 * 1024, nullptr);
    pcre2_jit_stack_assign(mc, nullptr, js);
  }
  ~MatchState() {
    pcre2_jit_stack_free(js);
    pcre2_match_context_free(mc);
    pcre2_match_data_free(md);
  }
};

// One match buffer and JIT stack per thread, shared by every pattern.
MatchState& match_state() {
  thread_local MatchState s;
  return s;
}

}  // namespace

std::string translate_js_regex(std::string_view p) {
  std::string out;
  out.reserve(p.size() + 64);
  bool in_class = false;
  // For each open group: whether it is an ASCII case-insensitive group.
  std::vector<bool> groups;
  auto caseless = [&] {
    for (bool g : groups) if (g) return true;
    return false;
  };
  for (size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (c == '\\') {
      if (i + 1 >= p.size()) throw Error("regex ends with a lone backslash: " + std::string(p));
      char e = p[++i];
      if (e == 's') {
        out += in_class ? std::string(kJsSpace) : "[" + std::string(kJsSpace) + "]";
      } else if (e == 'S') {
        if (in_class) throw Error("regex: \\S inside a character class is not supported: " + std::string(p));
        out += "[^" + std::string(kJsSpace) + "]";
      } else if (e == 'u' && i + 1 < p.size() && p[i + 1] == '{') {
        size_t close = p.find('}', i);
        if (close == std::string_view::npos) throw Error("regex: unterminated \\u{...}: " + std::string(p));
        out += "\\x" + std::string(p.substr(i + 1, close - i));
        i = close;
      } else if (e == 'u' && i + 4 < p.size() && is_hex(p[i + 1]) && is_hex(p[i + 2]) && is_hex(p[i + 3]) &&
                 is_hex(p[i + 4])) {
        out += "\\x{" + std::string(p.substr(i + 1, 4)) + "}";
        i += 4;
      } else {
        out += '\\';
        out += e;
        // Keep \p{..}, \x{..} and similar bodies verbatim.
        if ((e == 'p' || e == 'P' || e == 'x') && i + 1 < p.size() && p[i + 1] == '{') {
          size_t close = p.find('}', i);
          if (close == std::string_view::npos) throw Error("regex: unterminated escape: " + std::string(p));
          out.append(p.substr(i + 1, close - i));
          i = close;
        }
      }
      continue;
    }
    if (in_class) {
      if (c == ']') in_class = false;
      out += c;
      continue;
    }
    if (c == '[') {
      in_class = true;
      out += c;
      // A leading ']' or '^]' is a literal in PCRE2 but an empty class in JavaScript; keep it
      // simple and reject it.
      if (i + 1 < p.size() && p[i + 1] == '^') { out += '^'; ++i; }
      if (i + 1 < p.size() && p[i + 1] == ']') throw Error("regex: empty character class: " + std::string(p));
      continue;
    }
    if (c == '(') {
      if (p.substr(i, 4) == "(?i:") {
        groups.push_back(true);
        out += "(?:";
        i += 3;
      } else {
        groups.push_back(false);
        out += c;
      }
      continue;
    }
    if (c == ')') {
      if (!groups.empty()) groups.pop_back();
      out += c;
      continue;
    }
    if (c == '.') {
      out += "[^\\n\\r\\x{2028}\\x{2029}]";
      continue;
    }
    if (is_ascii_letter(c) && caseless()) {
      char lo = static_cast<char>(c | 0x20), up = static_cast<char>(c & ~0x20);
      out += '[';
      out += lo;
      out += up;
      out += ']';
      continue;
    }
    out += c;
  }
  return out;
}

struct Regex::Impl {
  pcre2_code* code = nullptr;
  ~Impl() { pcre2_code_free(code); }
};

Regex::Regex(std::string_view pattern) : impl_(std::make_unique<Impl>()), source_(pattern) {
  std::string translated = translate_js_regex(pattern);
  int err = 0;
  PCRE2_SIZE off = 0;
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                              PCRE2_UTF | PCRE2_DOLLAR_ENDONLY | PCRE2_NO_UTF_CHECK, &err, &off, nullptr);
  if (!impl_->code) {
    PCRE2_UCHAR buf[256];
    pcre2_get_error_message(err, buf, sizeof buf);
    throw Error("regex does not compile (" + std::string(reinterpret_cast<char*>(buf)) + " at offset " +
                std::to_string(off) + "): " + std::string(pattern));
  }
  // JIT is an optimisation only: without it (unsupported CPU) pcre2_match interprets.
  pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE);
}

Regex::~Regex() = default;
Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;

std::vector<std::pair<size_t, size_t>> Regex::find_all(std::string_view text) const {
  std::vector<std::pair<size_t, size_t>> out;
  find_all(text, out);
  return out;
}

void Regex::find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& out) const {
  MatchState& ms = match_state();
  auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;
  while (pos <= text.size()) {
    int rc = pcre2_match(impl_->code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, ms.md, ms.mc);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR buf[256];
      pcre2_get_error_message(rc, buf, sizeof buf);
      throw Error("regex match failed (" + std::string(reinterpret_cast<char*>(buf)) + "): " + source_);
    }
    PCRE2_SIZE* ov = pcre2_get_ovector_pointer(ms.md);
    size_t s = ov[0], e = ov[1];
    if (e > s) {
      out.emplace_back(s, e);
      pos = e;
    } else {
      if (s >= text.size()) break;
      pos = s + utf8_next(text, s).len;
    }
  }
}

bool Regex::search(std::string_view text) const {
  MatchState& ms = match_state();
  int rc = pcre2_match(impl_->code, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), 0,
                       PCRE2_NO_UTF_CHECK, ms.md, ms.mc);
  return rc >= 0;
}

}  // namespace strata
