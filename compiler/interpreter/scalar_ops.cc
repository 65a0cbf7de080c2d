// Element-level semantics of unary, binary, compare and convert (XLA).
// Floats are computed in double and rounded to the dtype; integers in 64-bit
// two's complement (wrapping through uint64) and then wrapped to the dtype by
// round_to_dtype. Implementation-defined cases are listed in interpreter.h.
#include "compiler/interpreter/scalar_ops.h"

#include <bit>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <limits>

#include "compiler/ir/literal.h"

namespace podsim::compiler::interp {

namespace {

bool is_int_like(DType t) { return is_integral(t) || t == DType::kPred; }

// The dtype's two's complement bit pattern of an integer value (low bits).
uint64_t bit_pattern(DType dtype, int64_t v) {
  const int bits = dtype == DType::kPred ? 1 : integral_bits(dtype);
  const auto u = static_cast<uint64_t>(v);
  return bits >= 64 ? u : u & ((uint64_t{1} << bits) - 1);
}

// Exact int64 value of an element stored as double (integers < 2^63).
int64_t to_int(double v) {
  if (v >= 9223372036854775807.0) return std::numeric_limits<int64_t>::max();
  if (v <= -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

// Wrapping arithmetic in uint64 (defined behaviour), back to two's complement.
int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t wrap_sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int64_t wrap_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

int64_t int_divide(int64_t a, int64_t b) {
  if (b == 0) return -1;  // all bits set; round_to_dtype makes it UINT_MAX for unsigned
  if (a == std::numeric_limits<int64_t>::min() && b == -1) return a;
  return a / b;  // C truncation toward zero
}

int64_t int_remainder(int64_t a, int64_t b) {
  if (b == 0) return a;
  if (b == -1) return 0;  // also covers INT64_MIN % -1
  return a % b;           // sign follows the dividend (C semantics)
}

// Exponentiation by squaring with wrap-around; negative exponents as documented.
int64_t int_power(int64_t base, int64_t exponent) {
  if (exponent < 0) {
    if (base == 1) return 1;
    if (base == -1) return (exponent % 2 == 0) ? 1 : -1;
    return 0;
  }
  int64_t result = 1;
  while (exponent > 0) {
    if (exponent & 1) result = wrap_mul(result, base);
    base = wrap_mul(base, base);
    exponent >>= 1;
  }
  return result;
}

// XLA's shifts: a shift amount (read as unsigned) of at least the bit width
// gives 0, or the sign fill for shift-right-arithmetic.
int64_t int_shift(Opcode op, DType dtype, int64_t a, int64_t b) {
  const int bits = dtype == DType::kPred ? 1 : integral_bits(dtype);
  const uint64_t amount = bit_pattern(dtype, b);
  switch (op) {
    case Opcode::kShiftLeft:
      return amount >= static_cast<uint64_t>(bits)
                 ? 0
                 : static_cast<int64_t>(static_cast<uint64_t>(a) << amount);
    case Opcode::kShiftRightLogical:
      return amount >= static_cast<uint64_t>(bits)
                 ? 0
                 : static_cast<int64_t>(bit_pattern(dtype, a) >> amount);
    default:  // arithmetic: a is sign-extended already (stored as its value)
      if (amount >= static_cast<uint64_t>(bits)) return a < 0 ? -1 : 0;
      return a >> amount;
  }
}

double int_binary(Opcode op, DType dtype, double x, double y) {
  const int64_t a = to_int(x), b = to_int(y);
  int64_t r = 0;
  switch (op) {
    case Opcode::kShiftLeft:
    case Opcode::kShiftRightLogical:
    case Opcode::kShiftRightArithmetic:
      r = int_shift(op, dtype, a, b);
      break;
    case Opcode::kAdd:
      r = wrap_add(a, b);
      break;
    case Opcode::kSubtract:
      r = wrap_sub(a, b);
      break;
    case Opcode::kMultiply:
      r = wrap_mul(a, b);
      break;
    case Opcode::kDivide:
      r = int_divide(a, b);
      break;
    case Opcode::kRemainder:
      r = int_remainder(a, b);
      break;
    case Opcode::kMaximum:
      r = a > b ? a : b;
      break;
    case Opcode::kMinimum:
      r = a < b ? a : b;
      break;
    case Opcode::kPower:
      r = int_power(a, b);
      break;
    case Opcode::kAnd:
      r = a & b;
      break;
    case Opcode::kOr:
      r = a | b;
      break;
    case Opcode::kXor:
      r = a ^ b;
      break;
    default:
      assert(false && "not an integer binary op");
      break;
  }
  if (dtype == DType::kPred) {
    // pred arithmetic is on {0,1}: logical ops stay in range; add acts as or.
    return r != 0 ? 1.0 : 0.0;
  }
  return round_to_dtype(dtype, static_cast<double>(r));
}

// XLA's maximum/minimum propagate NaN.
double float_max(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
  return a > b ? a : b;
}
double float_min(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
  return a < b ? a : b;
}

double float_binary(Opcode op, DType dtype, double a, double b) {
  double r = 0.0;
  switch (op) {
    case Opcode::kAdd:
      r = a + b;
      break;
    case Opcode::kSubtract:
      r = a - b;
      break;
    case Opcode::kMultiply:
      r = a * b;
      break;
    case Opcode::kDivide:
      r = a / b;
      break;
    case Opcode::kRemainder:
      r = std::fmod(a, b);
      break;
    case Opcode::kMaximum:
      r = float_max(a, b);
      break;
    case Opcode::kMinimum:
      r = float_min(a, b);
      break;
    case Opcode::kPower:
      r = std::pow(a, b);
      break;
    case Opcode::kAtan2:
      r = std::atan2(a, b);
      break;
    default:
      assert(false && "not a float binary op");
      break;
  }
  return round_to_dtype(dtype, r);
}

double sign_of(double x) {
  if (std::isnan(x) || x == 0.0) return x;  // keeps NaN and signed zeros
  return x > 0 ? 1.0 : -1.0;
}

}  // namespace

bool op_supports_dtype(Opcode op, DType dtype) {
  switch (op) {
    case Opcode::kAnd:
    case Opcode::kOr:
    case Opcode::kXor:
    case Opcode::kNot:
    case Opcode::kPopcnt:
    case Opcode::kClz:
    case Opcode::kShiftLeft:
    case Opcode::kShiftRightLogical:
    case Opcode::kShiftRightArithmetic:
      return is_int_like(dtype);
    case Opcode::kAtan2:
    case Opcode::kCbrt:
    case Opcode::kTan:
    case Opcode::kErf:
    case Opcode::kRoundNearestAfz:
    case Opcode::kRoundNearestEven:
      return is_floating(dtype) || is_complex(dtype);
    default:
      return true;
  }
}

double unary_value(Opcode op, DType dtype, double x) {
  if (is_int_like(dtype)) {
    const int64_t a = to_int(x);
    switch (op) {
      case Opcode::kNegate:
        return round_to_dtype(dtype, static_cast<double>(wrap_sub(0, a)));
      case Opcode::kAbs:
        return round_to_dtype(dtype, static_cast<double>(a < 0 ? wrap_sub(0, a) : a));
      case Opcode::kSign:
        return static_cast<double>((a > 0) - (a < 0));
      case Opcode::kNot:
        if (dtype == DType::kPred) return a != 0 ? 0.0 : 1.0;
        return round_to_dtype(dtype, static_cast<double>(~a));
      case Opcode::kCopy:
      case Opcode::kFloor:
      case Opcode::kCeil:
      case Opcode::kRoundNearestAfz:
      case Opcode::kRoundNearestEven:
        return x;
      case Opcode::kPopcnt:
        return static_cast<double>(std::popcount(bit_pattern(dtype, a)));
      case Opcode::kClz: {
        const int bits = dtype == DType::kPred ? 1 : integral_bits(dtype);
        return static_cast<double>(bits - std::bit_width(bit_pattern(dtype, a)));
      }
      default:
        break;  // transcendental ops on integers: computed as floats below
    }
  }
  double r = 0.0;
  switch (op) {
    case Opcode::kNegate:
      r = -x;
      break;
    case Opcode::kExp:
      r = std::exp(x);
      break;
    case Opcode::kExpm1:
      r = std::expm1(x);
      break;
    case Opcode::kLog:
      r = std::log(x);
      break;
    case Opcode::kLog1p:
      r = std::log1p(x);
      break;
    case Opcode::kTanh:
      r = std::tanh(x);
      break;
    case Opcode::kSqrt:
      r = std::sqrt(x);
      break;
    case Opcode::kRsqrt:
      r = 1.0 / std::sqrt(x);
      break;
    case Opcode::kAbs:
      r = std::fabs(x);
      break;
    case Opcode::kSign:
      r = sign_of(x);
      break;
    case Opcode::kFloor:
      r = std::floor(x);
      break;
    case Opcode::kCeil:
      r = std::ceil(x);
      break;
    case Opcode::kCos:
      r = std::cos(x);
      break;
    case Opcode::kSin:
      r = std::sin(x);
      break;
    case Opcode::kLogistic:
      r = 1.0 / (1.0 + std::exp(-x));
      break;
    case Opcode::kCopy:
      r = x;
      break;
    case Opcode::kRoundNearestAfz:
      r = std::round(x);
      break;  // halves away from zero
    case Opcode::kRoundNearestEven:
      r = std::nearbyint(x);
      break;  // default mode: halves to even
    case Opcode::kCbrt:
      r = std::cbrt(x);
      break;
    case Opcode::kTan:
      r = std::tan(x);
      break;
    case Opcode::kErf:
      r = std::erf(x);
      break;
    default:
      assert(false && "not a unary op");
      break;
  }
  return round_to_dtype(dtype, r);
}

double binary_value(Opcode op, DType dtype, double a, double b) {
  if (is_int_like(dtype)) return int_binary(op, dtype, a, b);
  return float_binary(op, dtype, a, b);
}

bool compare_value(ComparisonDirection direction, double a, double b) {
  // IEEE: every ordered comparison with NaN is false, NE is true.
  switch (direction) {
    case ComparisonDirection::kEq:
      return a == b;
    case ComparisonDirection::kNe:
      return a != b;
    case ComparisonDirection::kLt:
      return a < b;
    case ComparisonDirection::kLe:
      return a <= b;
    case ComparisonDirection::kGt:
      return a > b;
    case ComparisonDirection::kGe:
      return a >= b;
  }
  return false;
}

double convert_value(DType from, DType to, double x) {
  if (to == DType::kPred) return x != 0.0 ? 1.0 : 0.0;
  if (is_floating(to)) return round_to_dtype(to, x);
  if (!is_floating(from)) return round_to_dtype(to, x);  // integer -> integer wraps
  // float -> integer: truncate toward zero, saturate, NaN -> 0.
  if (std::isnan(x)) return 0.0;
  double lo = 0.0, hi = 0.0;
  switch (to) {
    case DType::kS8:
      lo = -128.0;
      hi = 127.0;
      break;
    case DType::kS32:
      lo = -2147483648.0;
      hi = 2147483647.0;
      break;
    case DType::kS64:
      lo = -9223372036854775808.0;
      hi = 9223372036854775807.0;
      break;
    case DType::kU8:
      lo = 0.0;
      hi = 255.0;
      break;
    case DType::kU32:
      lo = 0.0;
      hi = 4294967295.0;
      break;
    case DType::kU64:
      lo = 0.0;
      hi = 18446744073709551615.0;
      break;
    default: {
      const int bits = integral_bits(to);
      if (bits == 0) return round_to_dtype(to, x);
      const double span = std::ldexp(1.0, bits);
      lo = is_signed_integral(to) ? -span / 2 : 0.0;
      hi = is_signed_integral(to) ? span / 2 - 1 : span - 1;
      break;
    }
  }
  double t = std::trunc(x);
  if (t < lo) return lo;
  if (t > hi) return hi;
  return t;
}

}  // namespace podsim::compiler::interp
