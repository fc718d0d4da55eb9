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

inline constexpr std::string_view kToolResultOpen = "<tool_result>";
inline constexpr std::string_view kToolResultClose = "</tool_result>";

}  // namespace strata::dsv4
