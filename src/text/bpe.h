// The BPE model of a tokenizer.json: turns one pre-token (raw bytes) into vocab ids by applying
// merges in rank order (lowest rank first, leftmost first among equals). Two spellings:
//   byte-level         (GPT-2, DeepSeek, Qwen) tokens spell bytes through GPT-2's byte map;
//                      a word starts as its bytes;
//   SentencePiece-style (Gemma, Llama 2) tokens are UTF-8 text in which a marker ("▁") stands
//                      for a space; a word starts as its characters, and with byte_fallback a
//                      character the vocab lacks becomes its bytes' "<0xXX>" tokens (else the
//                      unknown token, consecutive ones fused into one when fuse_unk).
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace strata {

// How a vocab token decodes to bytes.
struct BpeSpelling {
  bool byte_level = true;
  // SentencePiece-style: the decoder's Replace step (marker -> text); "<0xXX>" tokens are bytes.
  std::string marker, marker_text;
};

class Bpe {
 public:
  // `model` is tokenizer.json's "model" object; throws Error unless it is a BPE whose merges
  // refer to vocab tokens (byte_fallback only with the SentencePiece spelling).
  explicit Bpe(const nlohmann::json& model, const BpeSpelling& spelling = {});

  // Appends the ids of one pre-token. Results for words up to 256 bytes are cached.
  void encode_word(std::string_view bytes, std::vector<int32_t>& out) const;

  // Vocab in tokenizer.json's spelling (mapped characters).
  const std::unordered_map<std::string, int32_t>& vocab() const { return vocab_; }
  // Raw bytes of each id (the token as written where it is not byte-mapped); empty optional
  // for ids the vocab does not have.
  const std::vector<std::optional<std::string>>& id_bytes() const { return id_bytes_; }
  // The spelling of each id in tokenizer.json (empty for ids the vocab does not have).
  const std::vector<std::string>& id_tokens() const { return id_tokens_; }

 private:
  struct Merge { int32_t rank, id; };
  void merge_word(std::string_view bytes, std::vector<int32_t>& out) const;
  // The initial symbols of a SentencePiece-style word: characters, byte tokens, unknowns.
  void char_symbols(std::string_view text, std::vector<int32_t>& ids) const;
  const Merge* find_merge(int32_t a, int32_t b) const;

  std::unordered_map<std::string, int32_t> vocab_;
  std::vector<std::optional<std::string>> id_bytes_;
  std::vector<std::string> id_tokens_;
  int32_t byte_id_[256];                       // -1: byte not in vocab (byte-level: its mapped
                                               // character; SentencePiece: "<0xXX>")
  std::optional<int32_t> unk_id_;
  bool byte_level_ = true, byte_fallback_ = false, fuse_unk_ = false;
  std::unordered_map<char32_t, int32_t> char_id_;  // SentencePiece: one-character tokens
  bool ignore_merges_ = false;
  std::unordered_map<std::string, int32_t> bytes_to_id_;  // only with ignore_merges
  // Open-addressing table keyed by the pair of ids: merges are looked up in the inner loop.
  // Key and value share a slot so a probe touches one cache line.
  struct Slot { uint64_t key; Merge merge; };
  std::vector<Slot> merge_slots_;
  uint64_t merge_mask_ = 0;

  // Looked up by string_view without building a std::string.
  struct WordHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  mutable std::mutex cache_mu_;
  mutable std::unordered_map<std::string, std::vector<int32_t>, WordHash, std::equal_to<>> cache_;
};

}  // namespace strata
