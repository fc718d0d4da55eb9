// Element types of tensors in checkpoints and caches, named as safetensors names them.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace strata {

enum class DType : uint8_t {
  F32, F16, BF16, F8_E4M3, F8_E8M0, I8, U8, I16, I32, I64, BOOL, F64,
};

// Bytes per element.
int dtype_size(DType t);
// The safetensors spelling ("F32", "F8_E4M3", ...).
std::string_view dtype_name(DType t);
// Parses a safetensors dtype string; nullopt for anything strata does not read.
std::optional<DType> parse_dtype(std::string_view s);

}  // namespace strata
