// Elementwise ops on arrays: unary (incl. convert), binary (incl. compare),
// select and clamp. Element semantics live in scalar_ops.cc.
#include <cmath>
#include <complex>

#include <fmt/format.h>

#include "compiler/interpreter/local_ops.h"
#include "compiler/interpreter/scalar_ops.h"

namespace podsim::compiler::interp {

namespace {

void check_same_dims(const Instruction& instr, const Literal& a, const Shape& expected) {
  if (a.is_tuple() || a.shape().dims() != expected.dims())
    fail(instr, fmt::format("operand shape {} does not match {}", a.shape().to_string(false),
                            expected.to_string(false)));
}

// select's predicate and clamp's bounds may be scalars (XLA broadcasts them).
void check_same_dims_or_scalar(const Instruction& instr, const Literal& a, const Shape& expected) {
  if (!a.is_tuple() && a.shape().rank() == 0) return;
  check_same_dims(instr, a, expected);
}

double element(const Literal& l, size_t i) {
  return l.values().size() == 1 ? l.values()[0] : l.values()[i];
}

using Complex = std::complex<double>;

// XLA reduce-precision: round the significand to `mantissa` bits (nearest
// even), then overflow past the largest exponent to infinity and flush
// values below the smallest normal (2^(1 - bias)) to a signed zero.
double reduce_precision(double x, int64_t exponent_bits, int64_t mantissa_bits) {
  if (!std::isfinite(x) || x == 0.0) return x;
  int exp = 0;
  std::frexp(x, &exp);  // |x| = m * 2^exp, m in [0.5, 1)
  const double quantum = std::ldexp(1.0, exp - 1 - static_cast<int>(mantissa_bits));
  const double r = std::nearbyint(x / quantum) * quantum;
  const int64_t bias = (int64_t{1} << (exponent_bits - 1)) - 1;
  if (std::fabs(r) >= std::ldexp(1.0, static_cast<int>(bias + 1)))
    return std::copysign(INFINITY, x);
  if (std::fabs(r) < std::ldexp(1.0, static_cast<int>(1 - bias))) return std::copysign(0.0, x);
  return r;
}

Complex complex_unary(const Instruction& instr, Complex z) {
  switch (instr.opcode) {
    case Opcode::kNegate:
      return -z;
    case Opcode::kExp:
      return std::exp(z);
    case Opcode::kExpm1:
      return std::exp(z) - 1.0;
    case Opcode::kLog:
      return std::log(z);
    case Opcode::kLog1p:
      return std::log(z + 1.0);
    case Opcode::kSqrt:
      return std::sqrt(z);
    case Opcode::kRsqrt:
      return 1.0 / std::sqrt(z);
    case Opcode::kTanh:
      return std::tanh(z);
    case Opcode::kCos:
      return std::cos(z);
    case Opcode::kSin:
      return std::sin(z);
    case Opcode::kTan:
      return std::tan(z);
    case Opcode::kSign:
      return z == 0.0 ? z : z / std::abs(z);
    case Opcode::kCopy:
    case Opcode::kConvert:
      return z;
    default:
      fail(instr, "not defined on complex values");
  }
}

Complex complex_binary(const Instruction& instr, Complex a, Complex b) {
  switch (instr.opcode) {
    case Opcode::kAdd:
      return a + b;
    case Opcode::kSubtract:
      return a - b;
    case Opcode::kMultiply:
      return a * b;
    case Opcode::kDivide:
      return a / b;
    case Opcode::kPower:
      return std::pow(a, b);
    default:
      fail(instr, "not defined on complex values");
  }
}

// Unary ops with a complex operand or result (interleaved (re, im) values).
Literal complex_or_part_unary(const Instruction& instr, const Literal& operand) {
  const DType from = operand.shape().dtype();
  const DType to = instr.shape.dtype();
  Literal result(instr.shape);
  auto& out = result.mutable_values();
  const auto& in = operand.values();
  const int64_t n = instr.shape.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    const auto u = static_cast<size_t>(i);
    const Complex z = is_complex(from) ? Complex(in[2 * u], in[2 * u + 1]) : Complex(in[u], 0.0);
    if (!is_complex(to)) {
      double v = 0;
      switch (instr.opcode) {
        case Opcode::kReal:
        case Opcode::kConvert:
          v = z.real();
          break;
        case Opcode::kImag:
          v = z.imag();
          break;
        case Opcode::kAbs:
          v = std::abs(z);
          break;
        default:
          fail(instr, "result must be complex");
      }
      out[u] = instr.opcode == Opcode::kConvert
                   ? convert_value(is_complex(from) ? DType::kF64 : from, to, v)
                   : round_to_dtype(to, v);
      continue;
    }
    const Complex r = complex_unary(instr, z);
    out[2 * u] = round_to_dtype(to, r.real());
    out[2 * u + 1] = round_to_dtype(to, r.imag());
  }
  return result;
}

}  // namespace

Literal eval_unary(const Instruction& instr, const Literal& operand) {
  check_same_dims(instr, operand, instr.shape);
  const DType from = operand.shape().dtype();
  const DType to = instr.shape.dtype();
  if (!op_supports_dtype(instr.opcode, from))
    fail(instr, fmt::format("not defined on {}", dtype_name(from)));
  if (is_complex(from) || is_complex(to) || instr.opcode == Opcode::kReal ||
      instr.opcode == Opcode::kImag)
    return complex_or_part_unary(instr, operand);
  Literal result(instr.shape);
  auto& out = result.mutable_values();
  const auto& in = operand.values();
  if (instr.opcode == Opcode::kIsFinite) {
    if (to != DType::kPred) fail(instr, "result must be pred");
    for (size_t i = 0; i < in.size(); ++i) out[i] = std::isfinite(in[i]) ? 1.0 : 0.0;
  } else if (instr.opcode == Opcode::kReducePrecision) {
    const int64_t e = instr.attrs.exponent_bits, m = instr.attrs.mantissa_bits;
    if (e < 1 || e > 11 || m < 0 || m > 52)
      fail(instr, "exponent_bits must be in [1, 11], mantissa_bits in [0, 52]");
    if (from != to) fail(instr, "result dtype differs from the operand dtype");
    for (size_t i = 0; i < in.size(); ++i)
      out[i] = round_to_dtype(to, reduce_precision(in[i], e, m));
  } else if (instr.opcode == Opcode::kConvert) {
    for (size_t i = 0; i < in.size(); ++i) out[i] = convert_value(from, to, in[i]);
  } else {
    if (from != to) fail(instr, "result dtype differs from the operand dtype");
    for (size_t i = 0; i < in.size(); ++i) out[i] = unary_value(instr.opcode, to, in[i]);
  }
  return result;
}

Literal eval_binary(const Instruction& instr, const Literal& lhs, const Literal& rhs) {
  check_same_dims(instr, lhs, instr.shape);
  check_same_dims(instr, rhs, instr.shape);
  const DType operand_type = lhs.shape().dtype();
  if (rhs.shape().dtype() != operand_type) fail(instr, "operand dtypes differ");
  Literal result(instr.shape);
  auto& out = result.mutable_values();
  const auto& a = lhs.values();
  const auto& b = rhs.values();
  const DType to = instr.shape.dtype();
  if (instr.opcode == Opcode::kComplex) {
    // complex(re, im): two real arrays -> one complex array.
    if (!is_complex(to)) fail(instr, "result must be complex");
    for (size_t i = 0; i < a.size(); ++i) {
      out[2 * i] = round_to_dtype(to, a[i]);
      out[2 * i + 1] = round_to_dtype(to, b[i]);
    }
    return result;
  }
  if (is_complex(operand_type)) {
    const size_t n = a.size() / 2;
    for (size_t i = 0; i < n; ++i) {
      const Complex x(a[2 * i], a[2 * i + 1]), y(b[2 * i], b[2 * i + 1]);
      if (instr.opcode == Opcode::kCompare) {
        const ComparisonDirection dir = instr.attrs.comparison;
        if (dir != ComparisonDirection::kEq && dir != ComparisonDirection::kNe)
          fail(instr, "complex values compare only for EQ and NE");
        out[i] = (x == y) == (dir == ComparisonDirection::kEq) ? 1.0 : 0.0;
        continue;
      }
      if (to != operand_type) fail(instr, "result dtype differs from the operand dtype");
      const Complex r = complex_binary(instr, x, y);
      out[2 * i] = round_to_dtype(to, r.real());
      out[2 * i + 1] = round_to_dtype(to, r.imag());
    }
    return result;
  }
  if (instr.opcode == Opcode::kCompare) {
    const ComparisonDirection dir = instr.attrs.comparison;
    for (size_t i = 0; i < a.size(); ++i) out[i] = compare_value(dir, a[i], b[i]) ? 1.0 : 0.0;
    return result;
  }
  if (!op_supports_dtype(instr.opcode, operand_type))
    fail(instr, fmt::format("not defined on {}", dtype_name(operand_type)));
  if (instr.shape.dtype() != operand_type)
    fail(instr, "result dtype differs from the operand dtype");
  for (size_t i = 0; i < a.size(); ++i)
    out[i] = binary_value(instr.opcode, operand_type, a[i], b[i]);
  return result;
}

Literal eval_select(const Instruction& instr, const Literal& pred, const Literal& on_true,
                    const Literal& on_false) {
  check_same_dims_or_scalar(instr, pred, instr.shape);
  check_same_dims(instr, on_true, instr.shape);
  check_same_dims(instr, on_false, instr.shape);
  Literal result(instr.shape);
  auto& out = result.mutable_values();
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = element(pred, i) != 0.0 ? on_true.values()[i] : on_false.values()[i];
  return result;
}

// clamp(min, x, max) = min(max(x, min), max), NaN-propagating like maximum/minimum.
Literal eval_clamp(const Instruction& instr, const Literal& min, const Literal& operand,
                   const Literal& max) {
  check_same_dims(instr, operand, instr.shape);
  check_same_dims_or_scalar(instr, min, instr.shape);
  check_same_dims_or_scalar(instr, max, instr.shape);
  const DType dt = instr.shape.dtype();
  Literal result(instr.shape);
  auto& out = result.mutable_values();
  for (size_t i = 0; i < out.size(); ++i) {
    const double lower = binary_value(Opcode::kMaximum, dt, operand.values()[i], element(min, i));
    out[i] = binary_value(Opcode::kMinimum, dt, lower, element(max, i));
  }
  return result;
}

}  // namespace podsim::compiler::interp
