// Chat prompts: an untrusted message list and tools array (what a client posts) rendered by
// each chat format: DeepSeek-V4's and V3.2's encoders and Jinja chat templates.
// Input: one byte of options, then {"messages": [...], "tools": [...], "kwargs": {...}} or a
// bare message array.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "chat_formats.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strata::fuzz::Input in(data, size);
  const uint8_t options = in.byte();
  const auto j = nlohmann::ordered_json::parse(in.rest(), nullptr, false);
  if (j.is_discarded()) return 0;
  nlohmann::ordered_json messages = j, tools = nullptr;
  strata::ChatRenderOptions o;
  if (j.is_object()) {
    messages = j.contains("messages") ? j["messages"] : nlohmann::ordered_json();
    if (j.contains("tools")) tools = j["tools"];
    if (j.contains("kwargs") && j["kwargs"].is_object()) o.template_kwargs = j["kwargs"];
  }
  static const char* const kEfforts[] = {"", "minimal", "low", "medium", "high", "max", "bogus", ""};
  o.thinking = options & 1;
  o.add_generation_prompt = !(options & 2);
  o.keep_reasoning = options & 4;
  o.reasoning_effort = kEfforts[(options >> 3) & 7];
  const auto& formats = strata::fuzz::chat_formats();
  const auto& format = *formats[(options >> 6) % formats.size()];
  try {
    const std::string prompt = format.render(messages, tools, o);
    (void)format.output_starts_in_reasoning(prompt, o);
  } catch (const strata::Error&) {
  }
  return 0;
}
