// Element-level semantics shared by the array ops and by scalar bodies
// (reduce / scatter / all-reduce combiners): unary, binary, compare, convert
// on one value, following XLA. Internal to the interpreter.
#pragma once

#include "compiler/ir/attributes.h"
#include "compiler/ir/dtype.h"
#include "compiler/ir/opcode.h"

namespace podsim::compiler::interp {

// Unary op other than convert; `dtype` is both operand and result type.
double unary_value(Opcode op, DType dtype, double x);
// Binary op other than compare; `dtype` is both operand and result type.
double binary_value(Opcode op, DType dtype, double a, double b);
bool compare_value(ComparisonDirection direction, double a, double b);
double convert_value(DType from, DType to, double x);

// Whether op is valid on dtype (and/or/xor/not need pred or integers).
bool op_supports_dtype(Opcode op, DType dtype);

}  // namespace podsim::compiler::interp
