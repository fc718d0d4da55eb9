// Runs a Grammar as a pushdown automaton over token bytes and gives each step's token mask.
//
// A parse state is a set of stacks of grammar positions (several while alternatives are
// ambiguous); each stack's top is a byte set to match, and an empty stack means the root rule
// is complete (then only EOS may follow). A mask is computed by walking the vocabulary trie
// from the state, pruning a subtree at its first rejected byte, and is cached by the state's
// contents: JSON revisits the same few states (inside a string, after a comma...) at every
// step, so a request pays the walk once per distinct state and later requests with the same
// grammar not at all.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "grammar/grammar.h"
#include "grammar/vocab_index.h"

namespace strata::grammar {

using Stack = std::vector<uint32_t>;  // grammar positions, bottom first
using StackSet = std::vector<Stack>;  // sorted, unique

struct TokenMask {
  std::vector<uint64_t> bits;  // over the VocabIndex's ids
  bool complete = false;       // the root may end here: EOS is allowed
  bool allows(int32_t id) const { return (bits[size_t(id) >> 6] >> (id & 63)) & 1; }
};

// A grammar bound to a vocabulary, with the mask cache every request on it shares.
class CompiledGrammar {
 public:
  CompiledGrammar(Grammar g, std::shared_ptr<const VocabIndex> vocab);

  const Grammar& grammar() const { return g_; }
  const VocabIndex& vocab() const { return *vocab_; }
  StackSet initial() const;
  // Advances the state over bytes; false (state unchanged) when the grammar rejects them.
  bool advance(StackSet& state, std::string_view bytes) const;
  // The same for an added token (which has no bytes in the trie).
  bool advance_token(StackSet& state, int32_t token) const;
  std::shared_ptr<const TokenMask> mask(const StackSet& state) const;

  struct Stats {
    int64_t hits = 0, misses = 0;
    double miss_seconds = 0;
  };
  Stats stats() const;

 private:
  std::shared_ptr<const TokenMask> compute(const StackSet& state) const;

  Grammar g_;
  std::shared_ptr<const VocabIndex> vocab_;
  mutable std::mutex mu_;
  mutable std::unordered_map<std::string, std::shared_ptr<const TokenMask>> cache_;
  mutable Stats stats_;
};

// One request's position in its grammar. Optionally starts after a given token (the end of
// the reasoning block): everything before it is unconstrained.
class Matcher {
 public:
  Matcher(std::shared_ptr<const CompiledGrammar> g, int32_t start_after_token = -1);

  bool active() const { return active_; }
  bool complete() const;
  // Sets every row the grammar does not allow to -inf; EOS ids are allowed once the root is
  // complete. When nothing is allowed (a grammar no token can continue), only EOS is.
  void apply(std::span<float> logits, std::span<const int32_t> eos_ids) const;
  // Records a sampled token. Throws strata::Error for a token the grammar does not allow.
  void accept(int32_t token, std::span<const int32_t> eos_ids);

  nlohmann::json state_json() const;
  void restore_state(const nlohmann::json& j);

 private:
  std::shared_ptr<const CompiledGrammar> g_;
  StackSet state_;
  int32_t start_after_;
  bool active_;
};

}  // namespace strata::grammar
