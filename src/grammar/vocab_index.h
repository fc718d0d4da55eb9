// The vocabulary as the grammar matcher walks it: each token's bytes, and a trie over them in
// preorder, so that a grammar state is advanced once per shared prefix and a whole subtree of
// tokens is skipped at the first byte the grammar rejects.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace strata {
class Tokenizer;
}

namespace strata::grammar {

class VocabIndex {
 public:
  struct Node {
    uint32_t end;         // preorder index just past this node's subtree
    uint32_t tok_begin;   // node_tokens[tok_begin, tok_end): tokens whose bytes end here
    uint32_t tok_end;
    uint16_t depth;       // bytes from the root
    uint8_t byte;         // the byte on the edge from the parent (unused at the root)
  };

  // token_bytes[id]: the token's bytes, or nullopt for a token the grammar never produces.
  explicit VocabIndex(std::vector<std::optional<std::string>> token_bytes);
  // Every token of the tokenizer's vocabulary but its added tokens (specials, chat markers),
  // which carry meaning beyond their text; EOS is allowed by the matcher separately.
  static std::shared_ptr<const VocabIndex> from_tokenizer(const Tokenizer& tok);

  int32_t size() const { return int32_t(bytes_.size()); }
  const std::optional<std::string>& bytes(int32_t id) const { return bytes_[size_t(id)]; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<int32_t>& node_tokens() const { return node_tokens_; }

 private:
  std::vector<std::optional<std::string>> bytes_;
  std::vector<Node> nodes_;
  std::vector<int32_t> node_tokens_;
};

}  // namespace strata::grammar
