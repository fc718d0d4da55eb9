// The tokenizer and model facts the server's unit tests check requests against: a DeepSeek-V4
// style model (the DeepSeek-V3 tokenizer, DeepSeek-V4's chat format) and a Qwen3 one (its
// tokenizer and the chat template in its tokenizer_config.json).
#pragma once
#include <memory>
#include <string>

#include "server/openai_request.h"
#include "text/chat_format.h"
#include "text/tokenizer.h"

namespace strata::server::test {

inline const Tokenizer& tokenizer() {
  static const Tokenizer t = Tokenizer::load(std::string(STRATA_SHARED_DIR) + "/tokenizers/deepseek-v3");
  return t;
}

inline const ChatFormat* chat_format() {
  static const std::unique_ptr<ChatFormat> f = deepseek_v4_chat_format();
  return f.get();
}

inline ModelInfo model_info(int64_t max_context = 4096) {
  ModelInfo m;
  m.id = "tiny";
  m.tokenizer = &tokenizer();
  m.chat_format = chat_format();
  m.max_context = max_context;
  m.vocab_size = tokenizer().vocab_size();
  m.max_n = 8;
  return m;
}

inline const std::string& qwen3_dir() {
  static const std::string d = std::string(STRATA_SHARED_DIR) + "/tokenizers/qwen3";
  return d;
}

inline const Tokenizer& qwen3_tokenizer() {
  static const Tokenizer t = Tokenizer::load(qwen3_dir());
  return t;
}

inline const ChatFormat* qwen3_chat_format() {
  static const std::unique_ptr<ChatFormat> f = load_chat_format(qwen3_dir(), "qwen3");
  return f.get();
}

inline ModelInfo qwen3_model_info(int64_t max_context = 4096) {
  ModelInfo m;
  m.id = "qwen";
  m.tokenizer = &qwen3_tokenizer();
  m.chat_format = qwen3_chat_format();
  m.max_context = max_context;
  m.vocab_size = qwen3_tokenizer().vocab_size();
  m.max_n = 8;
  return m;
}

}  // namespace strata::server::test
