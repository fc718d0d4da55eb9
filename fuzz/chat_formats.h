// The chat formats the chat targets exercise: DeepSeek-V4's and DeepSeek-V3.2's own encoders
// and DSML parsers, and Jinja chat templates with <think>/<tool_call> output (Qwen3's and
// DeepSeek-V3's templates, as their checkpoints ship them).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "text/chat_format.h"

namespace strata::fuzz {

inline const std::vector<std::unique_ptr<ChatFormat>>& chat_formats() {
  static const auto formats = [] {
    std::vector<std::unique_ptr<ChatFormat>> f;
    f.push_back(deepseek_v4_chat_format());
    f.push_back(deepseek_v32_chat_format());
    f.push_back(load_chat_format(std::string(STRATA_SHARED_DIR) + "/tokenizers/qwen3", "qwen3"));
    f.push_back(load_chat_format(std::string(STRATA_SHARED_DIR) + "/tokenizers/deepseek-v3", "deepseek_v3"));
    return f;
  }();
  return formats;
}

}  // namespace strata::fuzz
