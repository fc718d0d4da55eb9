// Real tokenizers (DeepSeek-V3's, Qwen3's) on arbitrary text: encoding gives ids inside the
// vocabulary, and decoding them gives back the text as the tokenizer normalizes it (the
// contract of Tokenizer::normalize: UTF-8 repaired, the normalizer applied between added
// tokens), so no byte is lost, duplicated or reordered by the pre-tokenizer regexes, the BPE
// merges or the added-token matcher.
// Input: one byte choosing the tokenizer and add_special, then the text.
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "fuzz_input.h"
#include "text/tokenizer.h"

namespace {
const std::vector<strata::Tokenizer>& tokenizers() {
  static const auto t = [] {
    std::vector<strata::Tokenizer> v;
    for (const char* name : {"deepseek-v3", "qwen3"})
      v.push_back(strata::Tokenizer::load(std::string(STRATA_SHARED_DIR) + "/tokenizers/" + name));
    return v;
  }();
  return t;
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)tokenizers();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strata::fuzz::Input in(data, size);
  const uint8_t choice = in.byte();
  const std::string_view text = in.rest();
  const auto& t = tokenizers()[(choice >> 1) % tokenizers().size()];
  const std::vector<int32_t> ids = t.encode(text);
  for (int32_t id : ids) FUZZ_CHECK(id >= 0 && id < t.vocab_size(), std::to_string(id));
  const std::string back = t.decode(ids);
  const std::string want = t.normalize(text);
  FUZZ_CHECK(back == want, "text:    " + std::string(text) + "\ndecoded: " + back + "\nwanted:  " + want);
  if (choice & 1) {
    const std::vector<int32_t> special = t.encode(text, true);
    for (int32_t id : special) FUZZ_CHECK(id >= 0 && id < t.vocab_size(), std::to_string(id));
  }
  return 0;
}
