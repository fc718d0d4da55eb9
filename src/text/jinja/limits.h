// Bounds that keep a hostile template from exhausting the stack, memory or time. Real chat
// templates stay far below each of them.
#pragma once
#include <cstddef>
#include <cstdint>

namespace strata::jinja {

inline constexpr int kMaxValueDepth = 256;             // nested lists/dicts in a value
inline constexpr int kMaxSyntaxDepth = 128;            // nested blocks, brackets and operands in the source
inline constexpr int kMaxExpressionHeight = 512;       // height of one expression tree (operator chains)
inline constexpr int kMaxCallDepth = 64;               // macro calls inside macro calls
inline constexpr int kMaxEvalDepth = 1000;             // nested evaluations at run time (all of the above)
inline constexpr size_t kMaxStringBytes = 64u << 20;   // one string value, and the output
inline constexpr size_t kMaxListItems = 1u << 20;      // one list (range(), concatenation)
inline constexpr uint64_t kMaxSteps = 5'000'000;       // nodes evaluated in one render, and:
inline constexpr size_t kBytesPerStep = 256;           //   one step per 256 bytes of text built
inline constexpr size_t kItemsPerStep = 16;            //   one step per 16 list items built

}  // namespace strata::jinja
