// Why a request stopped generating, with OpenAI's names.
#pragma once

namespace strata {

enum class FinishReason {
  none,    // still generating
  stop,    // EOS, a stop token or a stop string
  length,  // max_tokens reached
};

// "stop" / "length"; nullptr for none (OpenAI's null while streaming).
inline const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::stop: return "stop";
    case FinishReason::length: return "length";
    case FinishReason::none: break;
  }
  return nullptr;
}

}  // namespace strata
