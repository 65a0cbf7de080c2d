// Element types of the IR (the subset of XLA's PrimitiveType podsim models).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace podsim::compiler {

enum class DType : uint8_t { kPred, kS8, kS32, kS64, kU8, kU32, kBF16, kF16, kF32, kF64 };

// XLA's lower-case name: "pred", "s32", "bf16", ...
std::string_view dtype_name(DType t);
std::optional<DType> parse_dtype(std::string_view name);
// Bytes of one element (pred is stored as one byte, as in XLA).
int64_t dtype_bytes(DType t);
bool is_floating(DType t);
bool is_integral(DType t);  // signed or unsigned integers, not pred
bool is_signed_integral(DType t);

}  // namespace podsim::compiler
