// tokenizer.json (and tokenizer_config.json after a NUL byte): the vocabulary, merges, added
// tokens, normalizer, pre-tokenizer regexes and decoder of an untrusted checkpoint. A tokenizer
// that loads must encode any text (here, bytes of the input itself) to ids inside its
// vocabulary, and decode them without error.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "fuzz_input.h"
#include "text/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  const size_t nul = all.find('\0');
  const std::string_view tokenizer_json = all.substr(0, nul);
  const std::string_view config_json = nul == std::string_view::npos ? std::string_view() : all.substr(nul + 1);
  try {
    const strata::Tokenizer t = strata::Tokenizer::from_json(tokenizer_json, config_json);
    // Text to encode: a fixed sample and the tail of the input (arbitrary bytes, not UTF-8).
    const std::string_view tail = all.substr(all.size() > 256 ? all.size() - 256 : 0);
    for (std::string_view text : {std::string_view("Hello, world! 123 héllo 你好 <|im_start|>  \n\t x"), tail}) {
      const std::vector<int32_t> ids = t.encode(text, true);
      for (int32_t id : ids) FUZZ_CHECK(id >= 0 && id < t.vocab_size(), std::to_string(id));
      (void)t.decode(ids);
      (void)t.decode(ids, true);
      (void)t.normalize(text);
    }
    for (int32_t id = 0; id < t.vocab_size() && id < 64; ++id) {
      (void)t.token_bytes(id);
      (void)t.id_to_token(id);
    }
  } catch (const strata::Error&) {
  }
  return 0;
}
