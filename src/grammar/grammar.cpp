#include "grammar/grammar.h"

#include <cstdio>
#include <functional>
#include <map>

#include "core/error.h"

namespace strata::grammar {
namespace {

// Bounded repetition unrolls into one rule per optional copy: this caps how far a schema's
// minLength/maxItems may unroll a grammar.
constexpr size_t kMaxRules = 20000;

std::string set_to_string(const ByteSet& s) {
  int count = 0;
  for (int b = 0; b < 256; ++b) count += s.has(uint8_t(b));
  auto ch = [](int b) {
    char buf[8];
    if (b >= 0x21 && b < 0x7f && b != '\\' && b != ']' && b != '^' && b != '-') return std::string(1, char(b));
    std::snprintf(buf, sizeof buf, "\\x%02X", b);
    return std::string(buf);
  };
  const bool neg = count > 128;
  std::string out = neg ? "[^" : "[";
  for (int b = 0; b < 256;) {
    if (s.has(uint8_t(b)) == neg) {
      ++b;
      continue;
    }
    int e = b;
    while (e + 1 < 256 && s.has(uint8_t(e + 1)) != neg) ++e;
    out += ch(b);
    if (e > b) {
      out += '-';
      out += ch(e);
    }
    b = e + 1;
  }
  return out + "]";
}

}  // namespace

std::string Grammar::to_string() const {
  std::string out;
  for (size_t r = 0; r < rule_alts.size(); ++r) {
    out += rule_names[r] + " ::=";
    for (size_t a = 0; a < rule_alts[r].size(); ++a) {
      if (a) out += " |";
      if (elems[rule_alts[r][a]].kind == Elem::Kind::end) out += " \"\"";
      for (uint32_t p = rule_alts[r][a]; elems[p].kind != Elem::Kind::end; ++p) {
        out += " ";
        out += elems[p].kind == Elem::Kind::ref     ? rule_names[elems[p].arg]
               : elems[p].kind == Elem::Kind::token ? "<token " + std::to_string(elems[p].arg) + ">"
                                                    : set_to_string(sets[elems[p].arg]);
      }
    }
    out += "\n";
  }
  return out;
}

uint32_t GrammarBuilder::declare(std::string name) {
  if (alts_.size() >= kMaxRules)
    throw Error("the schema expands to more than " + std::to_string(kMaxRules) +
                " grammar rules (lower its minLength/maxLength/minItems/maxItems)");
  names_.push_back(std::move(name));
  alts_.emplace_back();
  defined_.push_back(false);
  return uint32_t(alts_.size() - 1);
}

void GrammarBuilder::define(uint32_t rule, std::vector<Seq> alts) {
  alts_.at(rule) = std::move(alts);
  defined_[rule] = true;
}

Elem GrammarBuilder::set(const ByteSet& s) {
  for (size_t i = 0; i < sets_.size(); ++i)
    if (sets_[i] == s) return {Elem::Kind::bytes, uint32_t(i)};
  sets_.push_back(s);
  return {Elem::Kind::bytes, uint32_t(sets_.size() - 1)};
}

Elem GrammarBuilder::byte(uint8_t b) {
  ByteSet s;
  s.add(b);
  return set(s);
}

GrammarBuilder::Seq GrammarBuilder::literal(std::string_view text) {
  Seq s;
  for (char c : text) s.push_back(byte(uint8_t(c)));
  return s;
}

Elem GrammarBuilder::optional(const Seq& item, const std::string& name) { return ref(rule(name, {item, {}})); }

std::vector<GrammarBuilder::Seq> GrammarBuilder::utf8_multibyte() {
  auto range = [&](uint8_t lo, uint8_t hi) {
    ByteSet s;
    s.add_range(lo, hi);
    return set(s);
  };
  ByteSet e1, f1;
  e1.add_range(0xe1, 0xec);
  e1.add_range(0xee, 0xef);
  f1.add_range(0xf1, 0xf3);
  const Elem C = range(0x80, 0xbf);
  return {{range(0xc2, 0xdf), C},
          {byte(0xe0), range(0xa0, 0xbf), C},
          {set(e1), C, C},
          {byte(0xed), range(0x80, 0x9f), C},
          {byte(0xf0), range(0x90, 0xbf), C, C},
          {set(f1), C, C, C},
          {byte(0xf4), range(0x80, 0x8f), C, C}};
}

Elem GrammarBuilder::repeat(const Seq& item, int64_t min, int64_t max, const std::string& name) {
  if (min < 0 || (max >= 0 && max < min)) throw Error(name + ": a repetition needs 0 <= min <= max");
  Seq tail;
  if (max < 0) {
    const uint32_t star = declare(name + "-star");
    Seq loop = item;
    loop.push_back(ref(star));
    define(star, {loop, {}});
    tail.push_back(ref(star));
  } else if (max > min) {
    // O_k ::= item O_{k-1} | ε: right-nested, so each step of the matcher stays at one frame
    uint32_t prev = rule(name + "-opt1", {item, {}});
    for (int64_t k = 2; k <= max - min; ++k) {
      Seq more = item;
      more.push_back(ref(prev));
      prev = rule(name + "-opt" + std::to_string(k), {more, {}});
    }
    tail.push_back(ref(prev));
  }
  Seq body;
  for (int64_t i = 0; i < min; ++i) body.insert(body.end(), item.begin(), item.end());
  body.insert(body.end(), tail.begin(), tail.end());
  return ref(rule(name, {body}));
}

Elem GrammarBuilder::separated(const Seq& item, const Seq& sep, int64_t min, int64_t max, const std::string& name) {
  if (max == 0) return ref(rule(name, {{}}));
  Seq rest = sep;
  rest.insert(rest.end(), item.begin(), item.end());
  Seq body = item;
  body.push_back(repeat(rest, min > 0 ? min - 1 : 0, max < 0 ? -1 : max - 1, name + "-rest"));
  if (min == 0) return ref(rule(name, {body, {}}));
  return ref(rule(name, {body}));
}

Grammar GrammarBuilder::finish(uint32_t root) {
  const size_t n = alts_.size();
  for (size_t r = 0; r < n; ++r)
    if (!defined_[r]) throw Error("grammar rule '" + names_[r] + "' is used but never defined");
  // Nullable rules, to a fixed point.
  std::vector<bool> nullable(n, false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < n; ++r) {
      if (nullable[r]) continue;
      for (const Seq& s : alts_[r]) {
        bool all = true;
        for (const Elem& e : s) all = all && e.kind == Elem::Kind::ref && nullable[e.arg];
        if (all) {
          nullable[r] = changed = true;
          break;
        }
      }
    }
  }
  // Left recursion: a cycle among the rules each can start with (past nullable prefixes).
  // The matcher expands references eagerly, so such a cycle would never end.
  std::vector<std::vector<uint32_t>> left(n);
  for (size_t r = 0; r < n; ++r)
    for (const Seq& s : alts_[r])
      for (const Elem& e : s) {
        if (e.kind != Elem::Kind::ref) break;
        left[r].push_back(e.arg);
        if (!nullable[e.arg]) break;
      }
  std::vector<uint8_t> mark(n, 0);  // 0 new, 1 on the path, 2 done
  std::function<void(uint32_t)> visit = [&](uint32_t r) {
    mark[r] = 1;
    for (uint32_t q : left[r]) {
      if (mark[q] == 1) throw Error("grammar rule '" + names_[q] + "' is left-recursive");
      if (mark[q] == 0) visit(q);
    }
    mark[r] = 2;
  };
  for (size_t r = 0; r < n; ++r)
    if (mark[r] == 0) visit(uint32_t(r));

  Grammar g;
  g.sets = sets_;
  g.rule_names = names_;
  g.rule_alts.resize(n);
  for (size_t r = 0; r < n; ++r)
    for (const Seq& s : alts_[r]) {
      g.rule_alts[r].push_back(uint32_t(g.elems.size()));
      g.elems.insert(g.elems.end(), s.begin(), s.end());
      g.elems.push_back({Elem::Kind::end, 0});
    }
  g.root = root;
  return g;
}

}  // namespace strata::grammar
