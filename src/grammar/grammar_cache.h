// Compiled grammars by schema text, for one tokenizer: the vocabulary trie is built on first
// use, and requests with the same schema share one CompiledGrammar and so its mask cache.
#pragma once
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "grammar/matcher.h"

namespace strata {
class Tokenizer;
}

namespace strata::grammar {

class GrammarCache {
 public:
  explicit GrammarCache(std::shared_ptr<const Tokenizer> tok, size_t capacity = 64);

  // Compiles (or finds) the grammar of a JSON Schema text, or of a tool-call spec
  // (tool_call_grammar.h). Throws strata::Error for one that is not JSON or cannot be compiled.
  std::shared_ptr<const CompiledGrammar> get(const std::string& json_schema);
  std::shared_ptr<const CompiledGrammar> get_tool_calls(const std::string& spec);

 private:
  std::shared_ptr<const CompiledGrammar> get(const std::string& key, const std::string& text, bool tools);

  std::shared_ptr<const Tokenizer> tok_;
  size_t capacity_;
  std::mutex mu_;
  std::shared_ptr<const VocabIndex> vocab_;
  std::list<std::string> order_;  // most recently used first
  std::unordered_map<std::string, std::pair<std::shared_ptr<const CompiledGrammar>, std::list<std::string>::iterator>>
      map_;
};

}  // namespace strata::grammar
