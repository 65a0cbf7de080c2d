// Shape inference: the result shape of an instruction from its opcode,
// attributes and operand shapes, following XLA's ShapeInference semantics.
// Used by the builder (to set shapes) and the verifier (to check them).
// Invalid operands/attributes raise UserError (message names the op and the
// mismatch), positioned at the instruction's location when it has one.
#pragma once

#include <vector>

#include "compiler/ir/module.h"

namespace podsim::compiler {

struct ShapeInferenceContext {
  const Module* module = nullptr;  // for called computations; may be null
  int64_t num_devices = 1;         // for collectives over "all devices"
};

// instr.shape is ignored (except for ops whose shape is an input: parameter,
// constant, iota, custom-call, which return it unchanged after checks).
Shape infer_shape(const Instruction& instr, const std::vector<const Shape*>& operand_shapes,
                  const ShapeInferenceContext& context);

}  // namespace podsim::compiler
