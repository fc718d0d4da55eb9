// The tokenizer and model facts the server's unit tests check requests against.
#pragma once
#include <string>

#include "server/openai_request.h"
#include "text/tokenizer.h"

namespace strata::server::test {

inline const Tokenizer& tokenizer() {
  static const Tokenizer t = Tokenizer::load(std::string(STRATA_SHARED_DIR) + "/tokenizers/deepseek-v3");
  return t;
}

inline ModelInfo model_info(int64_t max_context = 4096) {
  ModelInfo m;
  m.id = "tiny";
  m.tokenizer = &tokenizer();
  m.max_context = max_context;
  m.vocab_size = tokenizer().vocab_size();
  m.max_n = 8;
  return m;
}

}  // namespace strata::server::test
