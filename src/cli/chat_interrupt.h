// Ctrl-C in `strata chat` is a request, not a kill: while a ChatInterrupt lives, SIGINT only
// raises a flag, which the reply loop and the input reader take when they next look.
#pragma once

namespace strata::cli {

class ChatInterrupt {
 public:
  ChatInterrupt();   // installs the SIGINT handler
  ~ChatInterrupt();  // restores the previous one
  ChatInterrupt(const ChatInterrupt&) = delete;
  ChatInterrupt& operator=(const ChatInterrupt&) = delete;
  // True once per Ctrl-C seen since the last take().
  static bool take();
};

}  // namespace strata::cli
