// OpenAI request bodies: /v1/chat/completions, /v1/completions and /v1/responses as a client
// posts them, through the server's parsers (messages, tools, tool_choice, response_format and
// its JSON schema, sampling fields, logit_bias, stop strings, prompts as text or ids) against
// a DeepSeek-V4 or a Jinja-templated model. Everything a client can get wrong must be an
// ApiError (a 4xx), and whatever is accepted must be runnable: prompts inside the vocabulary
// and the context.
// Input: one byte choosing the endpoint and the chat format, then the body.
#include <cstdint>
#include <memory>
#include <string>

#include "chat_formats.h"
#include "core/error.h"
#include "fuzz_input.h"
#include "server/api_error.h"
#include "server/openai_request.h"
#include "server/responses_request.h"
#include "text/tokenizer.h"

namespace {
const strata::Tokenizer& tokenizer() {
  static const auto t = strata::Tokenizer::load(std::string(STRATA_SHARED_DIR) + "/tokenizers/deepseek-v3");
  return t;
}

void check(const strata::server::ApiRequest& r, const strata::server::ModelInfo& m) {
  FUZZ_CHECK(!r.prompts.empty() && r.n >= 1 && r.n <= m.max_n, "choices");
  FUZZ_CHECK(r.sampling.max_tokens.has_value(), "max_tokens is always set");
  const int64_t max_tokens = *r.sampling.max_tokens;
  for (const auto& p : r.prompts) {
    FUZZ_CHECK(!p.empty(), "an empty prompt was accepted");
    FUZZ_CHECK(int64_t(p.size()) + max_tokens <= m.max_context,
               std::to_string(p.size()) + " + " + std::to_string(max_tokens));
    for (int32_t id : p) FUZZ_CHECK(id >= 0 && id < m.vocab_size, std::to_string(id));
  }
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)tokenizer();
  (void)strata::fuzz::chat_formats();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strata::fuzz::Input in(data, size);
  const uint8_t choice = in.byte();
  const std::string_view body = in.rest();
  const auto& formats = strata::fuzz::chat_formats();
  strata::server::ModelInfo m;
  m.id = "strata";
  m.tokenizer = &tokenizer();
  m.chat_format = formats[(choice >> 2) % formats.size()].get();
  m.max_context = 4096;
  m.vocab_size = tokenizer().vocab_size();
  try {
    switch (choice & 3) {
      case 0: check(strata::server::parse_chat_request(body, m), m); break;
      case 1: check(strata::server::parse_completion_request(body, m), m); break;
      default: check(strata::server::parse_responses_request(body, m).api, m); break;
    }
  } catch (const strata::server::ApiError& e) {
    FUZZ_CHECK(e.status >= 400 && e.status < 500, std::to_string(e.status) + " " + e.what());
  }
  return 0;
}
