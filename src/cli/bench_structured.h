// `strata bench --json-schema FILE`: what decoding under a grammar costs at batch 1.
//
// One request decodes with the schema's grammar and one without, alternately (free, schema,
// free, schema), both sampled at temperature 1 with the same seed; each gives its time per
// token after the first. The grammar's own work is then replayed on the schema run's tokens
// outside the engine: the logits copy, mask and accept of every step, on a fresh grammar
// (cold: every state's trie walk) and again (warm: states from the cache, as a server serving
// that schema runs). Its share of a decode step is the warm replay over the free step.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "models/model.h"
#include "text/tokenizer.h"

namespace strata::cli {

nlohmann::ordered_json bench_structured(const std::shared_ptr<const models::Model>& model,
                                        const std::shared_ptr<const Tokenizer>& tok, const std::string& schema_file,
                                        int64_t prompt_tokens, int64_t decode_tokens);

void print_structured(const nlohmann::ordered_json& j);

}  // namespace strata::cli
