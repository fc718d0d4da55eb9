#include "grammar/grammar_cache.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "grammar/json_schema.h"
#include "text/tokenizer.h"

namespace strata::grammar {

GrammarCache::GrammarCache(std::shared_ptr<const Tokenizer> tok, size_t capacity)
    : tok_(std::move(tok)), capacity_(std::max<size_t>(capacity, 1)) {}

std::shared_ptr<const CompiledGrammar> GrammarCache::get(const std::string& json_schema) {
  std::shared_ptr<const VocabIndex> vocab;
  {
    std::lock_guard lk(mu_);
    if (auto it = map_.find(json_schema); it != map_.end()) {
      order_.splice(order_.begin(), order_, it->second.second);
      return it->second.first;
    }
    if (!vocab_) vocab_ = VocabIndex::from_tokenizer(*tok_);
    vocab = vocab_;
  }
  nlohmann::ordered_json schema;
  try {
    schema = nlohmann::ordered_json::parse(json_schema);
  } catch (const nlohmann::json::exception&) {
    throw Error("structured output: the JSON schema is not valid JSON");
  }
  auto g = std::make_shared<const CompiledGrammar>(grammar_from_json_schema(schema), vocab);
  std::lock_guard lk(mu_);
  if (auto it = map_.find(json_schema); it != map_.end()) return it->second.first;  // compiled meanwhile
  order_.push_front(json_schema);
  map_.emplace(json_schema, std::make_pair(g, order_.begin()));
  while (map_.size() > capacity_) {
    map_.erase(order_.back());
    order_.pop_back();
  }
  return g;
}

}  // namespace strata::grammar
