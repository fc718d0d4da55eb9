#include "cli/chat_interrupt.h"

#include <signal.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "core/error.h"

namespace strata::cli {
namespace {

volatile sig_atomic_t g_interrupted = 0;
struct sigaction g_previous;

// Only the flag: the signal may land on any thread, in the middle of anything.
void on_sigint(int) { g_interrupted = 1; }

}  // namespace

ChatInterrupt::ChatInterrupt() {
  g_interrupted = 0;
  struct sigaction sa = {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  // SA_RESTART: the engine's threads and stdout's writes carry on as if nothing happened; the
  // input reader polls the flag instead of relying on an interrupted read (the signal may be
  // delivered to another thread than the one reading).
  sa.sa_flags = SA_RESTART;
  if (::sigaction(SIGINT, &sa, &g_previous) != 0)
    throw Error(std::string("cannot install the Ctrl-C handler: ") + std::strerror(errno));
}

ChatInterrupt::~ChatInterrupt() { ::sigaction(SIGINT, &g_previous, nullptr); }

bool ChatInterrupt::take() {
  if (!g_interrupted) return false;
  g_interrupted = 0;
  return true;
}

}  // namespace strata::cli
