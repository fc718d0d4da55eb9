#include "grammar/vocab_index.h"

#include <algorithm>

#include "core/error.h"
#include "text/tokenizer.h"

namespace strata::grammar {

VocabIndex::VocabIndex(std::vector<std::optional<std::string>> token_bytes) : bytes_(std::move(token_bytes)) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i < bytes_.size(); ++i)
    if (bytes_[i] && !bytes_[i]->empty()) ids.push_back(int32_t(i));
  std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
    const std::string &x = *bytes_[size_t(a)], &y = *bytes_[size_t(b)];
    return x != y ? x < y : a < b;
  });
  // Preorder over the sorted strings: a node's tokens are those of its range that end at its
  // depth (they sort first), its children the runs sharing the next byte.
  struct Frame {
    size_t node, lo, hi, next;
  };
  nodes_.push_back({0, 0, 0, 0, 0});
  std::vector<Frame> stack{{0, 0, ids.size(), 0}};
  while (!stack.empty()) {
    Frame& f = stack.back();
    const size_t depth = nodes_[f.node].depth;
    if (f.next == f.lo) {  // first visit: this node's own tokens
      nodes_[f.node].tok_begin = uint32_t(node_tokens_.size());
      while (f.next < f.hi && bytes_[size_t(ids[f.next])]->size() == depth) node_tokens_.push_back(ids[f.next++]);
      nodes_[f.node].tok_end = uint32_t(node_tokens_.size());
    }
    if (f.next == f.hi) {
      nodes_[f.node].end = uint32_t(nodes_.size());
      stack.pop_back();
      continue;
    }
    const uint8_t b = uint8_t((*bytes_[size_t(ids[f.next])])[depth]);
    size_t e = f.next;
    while (e < f.hi && uint8_t((*bytes_[size_t(ids[e])])[depth]) == b) ++e;
    if (depth + 1 > 0xffff) throw Error("a token of over 65535 bytes");
    nodes_.push_back({0, 0, 0, uint16_t(depth + 1), b});
    const size_t lo = f.next;
    f.next = e;
    stack.push_back({nodes_.size() - 1, lo, e, lo});
  }
}

std::shared_ptr<const VocabIndex> VocabIndex::from_tokenizer(const Tokenizer& tok) {
  std::vector<std::optional<std::string>> b(size_t(tok.vocab_size()));
  std::vector<bool> added(b.size(), false);
  for (const auto& a : tok.added_tokens())
    if (a.id >= 0 && size_t(a.id) < added.size()) added[size_t(a.id)] = true;
  for (size_t i = 0; i < b.size(); ++i)
    if (!added[i]) b[i] = tok.token_bytes(int32_t(i));
  return std::make_shared<const VocabIndex>(std::move(b));
}

}  // namespace strata::grammar
