// The output parser of DeepSeek's own chat formats (V4, V3.2): the DSML StreamingParser behind
// ChatOutputParser, closing the turn with <｜end▁of▁sentence｜> when the streamed text lacks it
// (the end token is a skipped special token; a stop string or the length limit ends the turn
// the same way).
#pragma once
#include "text/chat_format.h"
#include "text/dsv4_tokens.h"

namespace strata {

class DsmlTurnParser final : public ChatOutputParser {
 public:
  DsmlTurnParser(bool thinking, const dsv4::DsmlBlock& block) : p_(thinking, block) {}
  std::vector<StreamEvent> feed(std::string_view delta) override { return p_.feed(delta); }
  std::vector<StreamEvent> finish() override {
    std::vector<StreamEvent> events;
    if (!p_.ended()) events = p_.feed(dsv4::kEos);
    for (StreamEvent& e : p_.finish()) events.push_back(std::move(e));
    return events;
  }
  const ParsedCompletion& result() const override { return p_.result(); }

 private:
  StreamingParser p_;
};

}  // namespace strata
