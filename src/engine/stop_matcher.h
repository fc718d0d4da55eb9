// Stop strings matched on the detokenized text stream, across token boundaries.
//
// Text arrives as deltas of any size. The matcher emits text as early as is safe: it holds
// back the longest tail of the text that could still grow into a stop string (and an
// incomplete UTF-8 sequence at the very end, so emitted text is never cut inside a
// character), and emits the rest. When a stop string completes, everything before it is
// emitted and the stop string itself is not (OpenAI semantics).
//
// When several stop strings occur, the one that completes first in the text wins (ties: the
// one that starts first, i.e. the longest). That is what a token-by-token stream would see,
// so the result depends only on the text, never on how it was split into deltas.
// Matching is bytewise; for valid UTF-8 that only matches at character boundaries.
#pragma once
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace strata {

class StopMatcher {
 public:
  struct Result {
    std::string emit;      // text that is now final and can be streamed
    bool stopped = false;  // a stop string completed; generation must end ("stop")
    int stop_index = -1;   // which of the stop strings, when stopped
  };

  // Empty stop strings are rejected with strata::Error.
  explicit StopMatcher(std::vector<std::string> stops);

  // Feeds the next piece of text. After a stop, further text is ignored (returns nothing).
  Result feed(std::string_view delta);

  // Generation ended for another reason (EOS, stop token, length): returns the held-back text,
  // which is output after all.
  std::string flush();

  bool stopped() const { return stopped_; }
  const std::string& held() const { return held_; }

  // State for export/restore: stop strings, held text and whether it has stopped.
  nlohmann::json to_json() const;
  static StopMatcher from_json(const nlohmann::json& j);
  // The same as CBOR (a request snapshot's bytes): from_bytes throws strata::Error on bad input.
  std::vector<uint8_t> to_bytes() const;
  static StopMatcher from_bytes(std::span<const uint8_t> bytes);

 private:
  size_t hold_length() const;

  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace strata
