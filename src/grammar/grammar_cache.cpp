#include "grammar/grammar_cache.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "grammar/json_schema.h"
#include "grammar/tool_call_grammar.h"
#include "text/tokenizer.h"

namespace strata::grammar {

GrammarCache::GrammarCache(std::shared_ptr<const Tokenizer> tok, size_t capacity)
    : tok_(std::move(tok)), capacity_(std::max<size_t>(capacity, 1)) {}

std::shared_ptr<const CompiledGrammar> GrammarCache::get(const std::string& json_schema) {
  return get("schema:" + json_schema, json_schema, false);
}

std::shared_ptr<const CompiledGrammar> GrammarCache::get_tool_calls(const std::string& spec) {
  return get("tools:" + spec, spec, true);
}

std::shared_ptr<const CompiledGrammar> GrammarCache::get(const std::string& key, const std::string& text, bool tools) {
  std::shared_ptr<const VocabIndex> vocab;
  {
    std::lock_guard lk(mu_);
    if (auto it = map_.find(key); it != map_.end()) {
      order_.splice(order_.begin(), order_, it->second.second);
      return it->second.first;
    }
    if (!vocab_) vocab_ = VocabIndex::from_tokenizer(*tok_);
    vocab = vocab_;
  }
  nlohmann::ordered_json spec;
  try {
    spec = nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception&) {
    throw Error(tools ? "structured output: the tool-call spec is not valid JSON"
                      : "structured output: the JSON schema is not valid JSON");
  }
  // Markers spelled by one added token are matched as that token (tool_call_grammar.h).
  const AddedTokenLookup added = [this](std::string_view t) -> std::optional<int32_t> {
    for (const auto& a : tok_->added_tokens())
      if (a.content == t) return a.id;
    return std::nullopt;
  };
  auto g = std::make_shared<const CompiledGrammar>(tools ? tool_call_grammar(spec, added) : grammar_from_json_schema(spec),
                                                   vocab);
  std::lock_guard lk(mu_);
  if (auto it = map_.find(key); it != map_.end()) return it->second.first;  // compiled meanwhile
  order_.push_front(key);
  map_.emplace(key, std::make_pair(g, order_.begin()));
  while (map_.size() > capacity_) {
    map_.erase(order_.back());
    order_.pop_back();
  }
  return g;
}

}  // namespace strata::grammar
