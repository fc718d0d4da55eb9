// Regular expressions of tokenizer.json (Split patterns), run by PCRE2 with JIT.
//
// The reference tokenizers we match run these patterns as JavaScript regexes with the `u`
// flag, so the pattern is first rewritten to mean the same in PCRE2: `\s`/`\S` use the
// JavaScript white-space set, `.` excludes JavaScript line terminators, `\uXXXX` escapes are
// accepted, and `(?i:...)` folds ASCII letters only. `\d`, `\w` and `\b` stay ASCII, as in
// JavaScript; `\p{..}` classes use PCRE2's Unicode tables.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata {

// The PCRE2 form of a tokenizer.json / JavaScript pattern; throws Error when it uses
// something that cannot be expressed faithfully.
std::string translate_js_regex(std::string_view pattern);

class Regex {
 public:
  // Compiles a tokenizer.json / JavaScript pattern (translated as above).
  explicit Regex(std::string_view pattern);
  ~Regex();
  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;

  // Byte ranges [start, end) of the successive non-empty matches in valid UTF-8 text, in the
  // order JavaScript's matchAll finds them (after an empty match the search moves on by one
  // character).
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view text) const;
  // The same, appended to out (lets callers reuse one buffer).
  void find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& out) const;
  // Whether the pattern matches somewhere in text.
  bool search(std::string_view text) const;
  const std::string& pattern() const { return source_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string source_;
};

}  // namespace strata
