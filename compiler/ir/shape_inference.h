// Shape inference: the result shape of an instruction from its opcode,
// attributes and operand shapes, following XLA's ShapeInference semantics.
// Used by the builder (to set shapes) and the verifier (to check them).
// Invalid operands/attributes raise UserError (message names the op and the
// mismatch), positioned at the instruction's location when it has one.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "compiler/ir/module.h"

namespace podsim::compiler {

struct ShapeInferenceContext {
  const Module* module = nullptr;  // for called computations; may be null
  int64_t num_devices = 1;         // for collectives over "all devices"
};

// A sparse dot's "sparsity=L.2@2:4" attribute: operand 0 (L) or 1 (R) stores
// n of every m elements along `dim`, so its logical size there is
// stored * m / n; the dot's third operand is the metadata saying which
// (docs/hlo-input.md#sparse-dot). nullopt when the dot is dense or the
// attribute is malformed.
struct DotSparsity {
  int operand = 0;
  int64_t dim = 0, n = 1, m = 1;
  // Bits of one metadata index field: ceil(log2 m), at least 1.
  int index_bits() const;
  // Stored values one metadata element of `meta` describes (8 for u16, 2:4).
  int64_t values_per_element(DType meta) const;
  // The logical operand `stored` stands for: `dim` is stored * m / n
  // (`dim` must be a dim of `stored`).
  Shape logical_shape(const Shape& stored) const;
};
std::optional<DotSparsity> dot_sparsity(const Attributes& attrs);

// instr.shape is ignored (except for ops whose shape is an input: parameter,
// constant, iota, custom-call, which return it unchanged after checks).
Shape infer_shape(const Instruction& instr, const std::vector<const Shape*>& operand_shapes,
                  const ShapeInferenceContext& context);

}  // namespace podsim::compiler
