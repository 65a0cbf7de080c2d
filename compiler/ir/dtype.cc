// Names and sizes of element types.
#include "compiler/ir/dtype.h"

#include <utility>

namespace podsim::compiler {

namespace {
struct DTypeInfo {
  DType type;
  std::string_view name;
  int64_t bytes;
};
constexpr DTypeInfo kInfo[] = {
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
    {DType::kS16, "s16", 2},
    {DType::kU16, "u16", 2},
    {DType::kU64, "u64", 8},
    {DType::kS4, "s4", 1},
    {DType::kU4, "u4", 1},
    {DType::kS2, "s2", 1},
    {DType::kU2, "u2", 1},
    {DType::kF8E4M3FN, "f8e4m3fn", 1},
    {DType::kF8E5M2, "f8e5m2", 1},
    {DType::kF8E4M3FNUZ, "f8e4m3fnuz", 1},
    {DType::kF8E5M2FNUZ, "f8e5m2fnuz", 1},
    {DType::kF8E4M3B11FNUZ, "f8e4m3b11fnuz", 1},
    {DType::kF8E4M3, "f8e4m3", 1},
    {DType::kF8E3M4, "f8e3m4", 1},
    {DType::kC64, "c64", 8},
    {DType::kC128, "c128", 16},
    {DType::kToken, "token", 0},
};
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
  switch (t) {
    case DType::kBF16:
    case DType::kF16:
    case DType::kF32:
    case DType::kF64:
    case DType::kF8E4M3FN:
    case DType::kF8E5M2:
    case DType::kF8E4M3FNUZ:
    case DType::kF8E5M2FNUZ:
    case DType::kF8E4M3B11FNUZ:
    case DType::kF8E4M3:
    case DType::kF8E3M4:
      return true;
    default:
      return false;
  }
}
int significand_bits(DType t) {
  switch (t) {
    case DType::kBF16:
      return 8;
    case DType::kF16:
      return 11;
    case DType::kF32:
    case DType::kC64:
      return 24;
    case DType::kF64:
    case DType::kC128:
      return 53;
    case DType::kF8E4M3FN:
    case DType::kF8E4M3FNUZ:
    case DType::kF8E4M3B11FNUZ:
    case DType::kF8E4M3:
      return 4;
    case DType::kF8E5M2:
    case DType::kF8E5M2FNUZ:
      return 3;
    case DType::kF8E3M4:
      return 5;
    default:
      return 0;
  }
}

bool is_complex(DType t) { return t == DType::kC64 || t == DType::kC128; }
bool is_signed_integral(DType t) {
  return t == DType::kS8 || t == DType::kS32 || t == DType::kS64 || t == DType::kS16 ||
         t == DType::kS4 || t == DType::kS2;
}
bool is_integral(DType t) { return integral_bits(t) > 0; }

int integral_bits(DType t) {
  switch (t) {
    case DType::kS2:
    case DType::kU2:
      return 2;
    case DType::kS4:
    case DType::kU4:
      return 4;
    case DType::kS8:
    case DType::kU8:
      return 8;
    case DType::kS16:
    case DType::kU16:
      return 16;
    case DType::kS32:
    case DType::kU32:
      return 32;
    case DType::kS64:
    case DType::kU64:
      return 64;
    default:
      return 0;
  }
}

}  // namespace podsim::compiler
