// The DeepSeek-V4 chat markers, spelled exactly as in DeepSeek's encoding/encoding_dsv4.py.
// The fullwidth bars (U+FF5C) and the U+2581 word separators are part of the token text.
#pragma once
#include <string_view>

namespace strata::dsv4 {

inline constexpr std::string_view kBos = "<｜begin▁of▁sentence｜>";
inline constexpr std::string_view kEos = "<｜end▁of▁sentence｜>";
inline constexpr std::string_view kUser = "<｜User｜>";
inline constexpr std::string_view kAssistant = "<｜Assistant｜>";
inline constexpr std::string_view kLatestReminder = "<｜latest_reminder｜>";
inline constexpr std::string_view kThinkStart = "<think>";
inline constexpr std::string_view kThinkEnd = "</think>";
inline constexpr std::string_view kDsml = "｜DSML｜";

// DSML tool-call block pieces. The parser stops on the open tags without their '>' (the
// official reader does the same), so these are prefixes, not whole tags.
inline constexpr std::string_view kToolCallsStart = "\n\n<｜DSML｜tool_calls";  // opens a block in a completion
inline constexpr std::string_view kToolCallsOpen = "<｜DSML｜tool_calls>";
inline constexpr std::string_view kToolCallsClose = "</｜DSML｜tool_calls>";
inline constexpr std::string_view kInvokeOpen = "<｜DSML｜invoke";
inline constexpr std::string_view kInvokeClose = "</｜DSML｜invoke";
inline constexpr std::string_view kParamOpen = "<｜DSML｜parameter";
inline constexpr std::string_view kParamClose = "/｜DSML｜parameter";

// A tool-call block's markers: DeepSeek-V4 names it "tool_calls", DeepSeek-V3.2 (whose
// encoding_dsv32.py V4's derives from) "function_calls"; invokes and parameters are the same.
struct DsmlBlock {
  std::string_view start, open, close;
};
inline constexpr DsmlBlock kToolCallsBlock{kToolCallsStart, kToolCallsOpen, kToolCallsClose};
inline constexpr DsmlBlock kFunctionCallsBlock{"\n\n<｜DSML｜function_calls", "<｜DSML｜function_calls>",
                                              "</｜DSML｜function_calls>"};

inline constexpr std::string_view kToolResultOpen = "<tool_result>";
inline constexpr std::string_view kToolResultClose = "</tool_result>";

}  // namespace strata::dsv4
