// Added tokens of tokenizer.json ("added_tokens"): strings matched verbatim in the text
// before pre-tokenization, each becoming one id.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata {

struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool special = false;
  bool lstrip = false;       // absorbs white space before it
  bool rstrip = false;       // absorbs white space after it
  bool normalized = false;   // matched in normalized text rather than raw text
  bool single_word = false;  // only matches when not touching a word character
};

// One piece of text after added-token extraction: either text to tokenize or a token.
struct Segment {
  std::string_view text;  // empty for a token
  int32_t token = -1;     // added token id, or -1 for text
};

// Finds added tokens leftmost-first, longest among those starting at the same place (the
// Hugging Face semantics); a match rejected by single_word is left as text.
class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  // `contents[i]` is what is searched for tokens[i] (its normalized form for normalized tokens).
  AddedTokenMatcher(const std::vector<const AddedToken*>& tokens, const std::vector<std::string>& contents);
  bool empty() const { return nodes_.size() <= 1; }
  // Appends the segments of text to out (text segments are views of `text`).
  void split(std::string_view text, std::vector<Segment>& out) const;

 private:
  struct Node {
    std::vector<std::pair<unsigned char, int32_t>> next;  // sorted by byte
    int32_t token = -1;                                   // index into tokens_
  };
  int32_t child(int32_t node, unsigned char b) const;
  std::vector<Node> nodes_{Node{}};
  std::vector<const AddedToken*> tokens_;
  bool first_byte_[256] = {};
};

// JavaScript's white space (the set String.prototype.trim removes), used for lstrip/rstrip.
bool is_js_space(char32_t cp);

}  // namespace strata
