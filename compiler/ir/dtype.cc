// Names and sizes of element types.
#include "compiler/ir/dtype.h"

#include <array>
#include <utility>

namespace podsim::compiler {

namespace {
struct DTypeInfo {
  DType type;
  std::string_view name;
  int64_t bytes;
};
constexpr std::array<DTypeInfo, 10> kInfo = {{
    {DType::kPred, "pred", 1},
    {DType::kS8, "s8", 1},
    {DType::kS32, "s32", 4},
    {DType::kS64, "s64", 8},
    {DType::kU8, "u8", 1},
    {DType::kU32, "u32", 4},
    {DType::kBF16, "bf16", 2},
    {DType::kF16, "f16", 2},
    {DType::kF32, "f32", 4},
    {DType::kF64, "f64", 8},
}};
const DTypeInfo& info(DType t) { return kInfo[static_cast<size_t>(t)]; }
}  // namespace

std::string_view dtype_name(DType t) { return info(t).name; }

std::optional<DType> parse_dtype(std::string_view name) {
  for (const auto& i : kInfo)
    if (i.name == name) return i.type;
  return std::nullopt;
}

int64_t dtype_bytes(DType t) { return info(t).bytes; }

bool is_floating(DType t) {
  return t == DType::kBF16 || t == DType::kF16 || t == DType::kF32 || t == DType::kF64;
}
bool is_signed_integral(DType t) {
  return t == DType::kS8 || t == DType::kS32 || t == DType::kS64;
}
bool is_integral(DType t) {
  return is_signed_integral(t) || t == DType::kU8 || t == DType::kU32;
}

}  // namespace podsim::compiler
