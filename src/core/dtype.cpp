#include "core/dtype.h"

#include <array>
#include <utility>

namespace strata {
namespace {
struct Info {
  DType t;
  std::string_view name;
  int size;
};
constexpr std::array<Info, 12> kInfo{{
    {DType::F32, "F32", 4},     {DType::F16, "F16", 2},         {DType::BF16, "BF16", 2},
    {DType::F8_E4M3, "F8_E4M3", 1}, {DType::F8_E8M0, "F8_E8M0", 1}, {DType::I8, "I8", 1},
    {DType::U8, "U8", 1},       {DType::I16, "I16", 2},         {DType::I32, "I32", 4},
    {DType::I64, "I64", 8},     {DType::BOOL, "BOOL", 1},       {DType::F64, "F64", 8},
}};
}  // namespace

int dtype_size(DType t) { return kInfo[size_t(t)].size; }
std::string_view dtype_name(DType t) { return kInfo[size_t(t)].name; }

std::optional<DType> parse_dtype(std::string_view s) {
  for (const auto& i : kInfo)
    if (i.name == s) return i.t;
  return std::nullopt;
}

}  // namespace strata
