// Byte-level BPE tokenizer loaded from a checkpoint's tokenizer.json and
// tokenizer_config.json (DeepSeek-V3/V4, Qwen3 and other GPT-2-style tokenizers).
//
// encode: invalid UTF-8 is first replaced by U+FFFD per maximal ill-formed subpart (what the
// reference JavaScript and Rust implementations see, since they take strings); then added
// tokens are cut out of the raw text, the rest is normalized (where added tokens marked
// `normalized` are cut out again), pre-tokenized and BPE-encoded.
// decode: added tokens give their content, vocab tokens their bytes; bytes that are not valid
// UTF-8 come out as U+FFFD.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "text/added_tokens.h"

namespace strata {

class Bpe;
class Normalizer;
class PreTokenizer;

class Tokenizer {
 public:
  // Loads DIR/tokenizer.json and, if present, DIR/tokenizer_config.json.
  static Tokenizer load(const std::string& dir);
  // From the text of the two files (config may be empty).
  static Tokenizer from_json(std::string_view tokenizer_json, std::string_view config_json = {});

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // Ids of text; with add_special, BOS/EOS as tokenizer_config.json's add_bos_token /
  // add_eos_token ask.
  std::vector<int32_t> encode(std::string_view text, bool add_special = false) const;
  // The text decode(encode(s)) gives: UTF-8 repaired, the normalizer applied between added
  // tokens, and (SentencePiece-style) the space marker turned back into spaces.
  std::string normalize(std::string_view text) const;
  // Text of ids; throws Error naming the first id outside the vocabulary.
  std::string decode(std::span<const int32_t> ids, bool skip_special = false) const;
  // Bytes one id contributes to decoded text (empty for a skipped special token); not
  // necessarily valid UTF-8 on its own.
  std::string token_bytes(int32_t id, bool skip_special = false) const;

  int32_t bos_id() const { return bos_id_; }  // -1 when the tokenizer has none
  int32_t eos_id() const { return eos_id_; }  // -1 when the tokenizer has none
  bool add_bos() const { return add_bos_; }
  bool add_eos() const { return add_eos_; }
  // One past the largest id (vocab and added tokens).
  int32_t vocab_size() const { return vocab_size_; }
  std::optional<int32_t> token_to_id(std::string_view token) const;
  // The token as tokenizer.json writes it; throws Error for an unknown id.
  std::string id_to_token(int32_t id) const;
  bool is_special(int32_t id) const;
  const std::vector<AddedToken>& added_tokens() const { return added_; }

 private:
  Tokenizer();
  void encode_section(std::string_view text, std::vector<int32_t>& out) const;
  void check_id(int32_t id) const;

  std::unique_ptr<Bpe> bpe_;
  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::vector<AddedToken> added_;
  std::unordered_map<int32_t, size_t> added_by_id_;
  std::unordered_map<std::string, int32_t> added_by_content_;
  std::vector<bool> special_;  // by id
  AddedTokenMatcher raw_matcher_, normalized_matcher_;
  int32_t bos_id_ = -1, eos_id_ = -1, vocab_size_ = 0;
  bool add_bos_ = false, add_eos_ = false, clean_up_spaces_ = false;
  // SentencePiece-style: the decoder's Replace step, applied to added tokens' content too.
  std::string marker_, marker_text_;
};

// Incremental decoding for streamed generation: push ids one at a time and get the text
// they complete. Bytes of an unfinished UTF-8 character are held back until it completes,
// so the concatenated output equals decode() of all ids (without clean-up of spaces).
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tok, bool skip_special = false) : tok_(tok), skip_special_(skip_special) {}
  // Text completed by this id (possibly empty).
  std::string push(int32_t id);
  // Whatever is held back, with an unfinished character as U+FFFD; resets the decoder.
  std::string flush();

 private:
  const Tokenizer& tok_;
  bool skip_special_;
  std::string pending_;
};

}  // namespace strata
