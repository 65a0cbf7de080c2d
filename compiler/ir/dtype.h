// Element types of the IR (the subset of XLA's PrimitiveType podsim models).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace podsim::compiler {

// The first ten are podsim's original set; the rest are XLA's other element
// types, appended so existing numbering stays. Sub-byte integers (s4, u4,
// s2, u2) occupy one byte each, as in XLA's default (unpacked) layout;
// token is a zero-byte ordering value; c64/c128 are (real, imag) pairs.
enum class DType : uint8_t {
  kPred,
  kS8,
  kS32,
  kS64,
  kU8,
  kU32,
  kBF16,
  kF16,
  kF32,
  kF64,
  kS16,
  kU16,
  kU64,
  kS4,
  kU4,
  kS2,
  kU2,
  kF8E4M3FN,
  kF8E5M2,
  kF8E4M3FNUZ,
  kF8E5M2FNUZ,
  kF8E4M3B11FNUZ,
  kF8E4M3,
  kF8E3M4,
  kC64,
  kC128,
  kToken
};

// XLA's lower-case name: "pred", "s32", "bf16", ...
std::string_view dtype_name(DType t);
std::optional<DType> parse_dtype(std::string_view name);
// Bytes of one element (pred is stored as one byte, as in XLA).
int64_t dtype_bytes(DType t);
bool is_floating(DType t);
bool is_integral(DType t);  // signed or unsigned integers, not pred
bool is_signed_integral(DType t);
bool is_complex(DType t);  // c64, c128
// Significand bits with the implicit one of a floating (or complex) type:
// bf16 8, f16 11, f32/c64 24, f64/c128 53, the f8 types 3-5; 0 for others.
int significand_bits(DType t);
// Bits of an integer type's value (s4 -> 4, u16 -> 16); 0 for the others.
int integral_bits(DType t);

}  // namespace podsim::compiler
