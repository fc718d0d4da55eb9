// A context-free grammar over bytes, the form structured output decodes under: rules of
// alternatives, each a sequence of byte sets and rule references. JSON Schema compiles to it
// (json_schema.h); the matcher (matcher.h) runs it as a pushdown automaton over token bytes.
//
// Elements are stored flat: each alternative is a run of elements closed by an End element, so
// a parse position is one index into `elems`. Repetition is expanded into helper rules when the
// grammar is built (right recursion, which the matcher runs in constant stack depth).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata::grammar {

struct ByteSet {
  std::array<uint64_t, 4> bits{};
  bool has(uint8_t b) const { return (bits[b >> 6] >> (b & 63)) & 1; }
  void add(uint8_t b) { bits[b >> 6] |= uint64_t(1) << (b & 63); }
  void add_range(uint8_t lo, uint8_t hi) {
    for (int b = lo; b <= hi; ++b) add(uint8_t(b));
  }
  bool operator==(const ByteSet&) const = default;
};

struct Elem {
  // token: one whole added token (a chat marker such as <tool_call>), which has no bytes the
  // vocabulary trie could spell
  enum class Kind : uint8_t { bytes, ref, end, token };
  Kind kind;
  uint32_t arg;  // index into Grammar::sets (bytes), rule id (ref), token id (token); unused for end
};

struct Grammar {
  std::vector<Elem> elems;
  std::vector<ByteSet> sets;
  std::vector<std::vector<uint32_t>> rule_alts;  // rule id -> first element of each alternative
  std::vector<std::string> rule_names;
  uint32_t root = 0;

  // A readable dump (one rule a line, GBNF-like), for tests and error messages.
  std::string to_string() const;
};

// Builds a Grammar. Rules are declared first (so they can refer to each other, recursively),
// then given their alternatives. Every helper keeps the grammar free of left recursion and of
// repeated nullable items, which the matcher relies on.
class GrammarBuilder {
 public:
  using Seq = std::vector<Elem>;

  uint32_t declare(std::string name);
  void define(uint32_t rule, std::vector<Seq> alts);
  uint32_t rule(std::string name, std::vector<Seq> alts) {
    const uint32_t r = declare(std::move(name));
    define(r, std::move(alts));
    return r;
  }

  Elem set(const ByteSet& s);
  Elem byte(uint8_t b);
  Elem ref(uint32_t rule) const { return {Elem::Kind::ref, rule}; }
  Elem token(int32_t id) const { return {Elem::Kind::token, uint32_t(id)}; }
  Seq literal(std::string_view text);

  // item{min,max} (max < 0: unbounded). `item` must not derive the empty string.
  Elem repeat(const Seq& item, int64_t min, int64_t max, const std::string& name);
  // item (sep item){min-1,max-1}, or nothing when min == 0.
  Elem separated(const Seq& item, const Seq& sep, int64_t min, int64_t max, const std::string& name);
  Elem optional(const Seq& item, const std::string& name);
  // The well-formed UTF-8 sequences of two to four bytes (no overlongs, no surrogates), one
  // alternative each: with the single bytes a text allows, its character rule.
  std::vector<Seq> utf8_multibyte();

  // Checks that every rule is defined and that none is left-recursive, then returns the grammar.
  Grammar finish(uint32_t root);

  size_t rule_count() const { return alts_.size(); }

 private:
  std::vector<std::string> names_;
  std::vector<std::vector<Seq>> alts_;
  std::vector<bool> defined_;
  std::vector<ByteSet> sets_;
};

}  // namespace strata::grammar
