// Elementwise ops on arrays: unary (incl. convert), binary (incl. compare),
// select and clamp. Element semantics live in scalar_ops.cc.
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

double element(const Literal& l, size_t i) { return l.values().size() == 1 ? l.values()[0] : l.values()[i]; }

}  // namespace

Literal eval_unary(const Instruction& instr, const Literal& operand) {
  check_same_dims(instr, operand, instr.shape);
  const DType from = operand.shape().dtype();
  const DType to = instr.shape.dtype();
  if (!op_supports_dtype(instr.opcode, from))
    fail(instr, fmt::format("not defined on {}", dtype_name(from)));
  Literal result(instr.shape);
  auto& out = result.mutable_values();
  const auto& in = operand.values();
  if (instr.opcode == Opcode::kConvert) {
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
  if (instr.opcode == Opcode::kCompare) {
    const ComparisonDirection dir = instr.attrs.comparison;
    for (size_t i = 0; i < a.size(); ++i) out[i] = compare_value(dir, a[i], b[i]) ? 1.0 : 0.0;
    return result;
  }
  if (!op_supports_dtype(instr.opcode, operand_type))
    fail(instr, fmt::format("not defined on {}", dtype_name(operand_type)));
  if (instr.shape.dtype() != operand_type) fail(instr, "result dtype differs from the operand dtype");
  for (size_t i = 0; i < a.size(); ++i) out[i] = binary_value(instr.opcode, operand_type, a[i], b[i]);
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
