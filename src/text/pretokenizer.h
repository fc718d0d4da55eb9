// The `pre_tokenizer` of tokenizer.json: splits normalized text into pieces that BPE
// encodes independently. Supported: Split (Regex or String pattern; every behavior; invert)
// and ByteLevel (add_prefix_space, use_regex), alone or in a Sequence whose last step is
// ByteLevel (byte-level BPE needs it; SentencePiece-style BPE has none, and may have no
// pre-tokenizer at all).
#pragma once
#include <deque>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace strata {

class PreTokenizerStep {
 public:
  virtual ~PreTokenizerStep() = default;
  // Replaces pieces with their split; new text that is not a view of the input (an added
  // prefix space) is stored in arena.
  virtual void apply(std::vector<std::string_view>& pieces, std::deque<std::string>& arena) const = 0;
};

enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

// Hugging Face semantics: cut text at the matches of a pattern, then keep, drop or join the
// delimiters. With invert, the non-matching spans are the delimiters.
// Pieces of "The-final--countdown" split on "-":
//   Removed            The | final | countdown
//   Isolated           The | - | final | - | - | countdown
//   MergedWithPrevious The- | final- | - | countdown
//   MergedWithNext     The | -final | - | -countdown
//   Contiguous         The | - | final | -- | countdown
std::vector<std::string_view> split_pieces(std::string_view text,
                                           const std::vector<std::pair<size_t, size_t>>& matches,
                                           SplitBehavior behavior, bool invert);
// The same, appended to out.
void split_pieces(std::string_view text, const std::vector<std::pair<size_t, size_t>>& matches,
                  SplitBehavior behavior, bool invert, std::vector<std::string_view>& out);

class PreTokenizer {
 public:
  PreTokenizer(const nlohmann::json& j, bool byte_level);
  ~PreTokenizer();
  // The pieces of one normalized section.
  std::vector<std::string_view> split(std::string_view text, std::deque<std::string>& arena) const;

 private:
  std::vector<std::unique_ptr<PreTokenizerStep>> steps_;
};

}  // namespace strata
