// Reverse-mode automatic differentiation on the IR.
//
// emit_gradients() appends, to a ComputationBuilder that already holds the
// forward values, the backward pass of a source computation: adjoints are
// propagated from the root to the parameters in reverse topological order
// (one linear pass; an instruction's adjoint is the sum of its users'
// contributions). Forward values the backward needs are read through a
// ResidualProvider, which saves or recomputes them (remat.h).
//
// Differentiated ops: parameter, elementwise unary/binary (non-smooth points
// documented in vjp_rules.cc), convert, copy, select, clamp, broadcast,
// reshape, transpose, slice, pad, concatenate, reverse, dynamic-slice,
// dynamic-update-slice, reduce (add / max / min bodies), dot, gather,
// scatter (add or overwrite body), tuple, get-tuple-element, and while loops
// of the counted form (see while_autodiff.h; the forward must be copied with
// copy_forward so the loop records its carries). Constants, iota, compares,
// integer values and custom-call kStopGradientTarget results carry no
// gradient. Anything else on a path from a
// parameter to the loss is a UserError.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/ir/builder.h"
#include "compiler/ir/module.h"
#include "compiler/training/ir_helpers.h"
#include "compiler/training/remat.h"
#include "compiler/training/while_autodiff.h"

namespace podsim::compiler {

struct GradientRequest {
  // The computation to differentiate. Its called computations must exist at
  // the same ids in the module the builder points into (the transforms work
  // on a copy of the forward module, so this holds).
  const Computation* source = nullptr;
  // forward_map[i]: id in the builder of source instruction i (from
  // copy_instructions).
  const std::vector<InstrId>* forward_map = nullptr;
  // Recording copies of the source's while loops (from copy_forward); a
  // while loop on a gradient path without one is a UserError.
  const WhileRecordings* loops = nullptr;
  // Adjoint of the source root, an id in the builder (same shape as the root;
  // array roots only).
  InstrId root_adjoint = kNoId;
  // For a tuple-shaped root (a while body): the adjoint of each element
  // (kNoId = zero). Used instead of root_adjoint.
  std::vector<InstrId> root_element_adjoints;
  RematChoice remat;
  // By parameter_number: which parameters to differentiate with respect to
  // (empty = all). The training step differentiates only the weights, so no
  // backward ops are spent on the inputs' adjoints.
  std::vector<bool> wrt_parameters;
};

struct GradientResult {
  // Indexed by parameter_number: the adjoint of that parameter, or kNoId when
  // no gradient reaches it (integer inputs, unused parameters).
  std::vector<InstrId> parameter_adjoints;
  // For tuple-shaped parameters: the adjoint of each element (kNoId = zero).
  std::vector<std::vector<InstrId>> parameter_element_adjoints;
  double recomputed_flops = 0;
  int64_t recomputed_instructions = 0;
};

GradientResult emit_gradients(ComputationBuilder& builder, training::ReducerCache& reducers,
                              const GradientRequest& request);

// Copies `source`'s instructions into `builder` with parameter number p
// replaced by parameter_values[p] (ids in the builder); returns the map
// source id -> builder id. Names, op_names and shardings are kept.
std::vector<InstrId> copy_instructions(ComputationBuilder& builder, const Computation& source,
                                       const std::vector<InstrId>& parameter_values);

// copy_instructions, but counted while loops become recording loops (see
// while_autodiff.h) so that the backward pass can differentiate them.
// `module` is the module the builder points into (bodies are added to it).
struct ForwardCopy {
  std::vector<InstrId> map;
  WhileRecordings loops;
};
ForwardCopy copy_forward(ComputationBuilder& builder, Module& module, const Computation& source,
                         const std::vector<InstrId>& parameter_values);

// Convenience for tests and tools: a module with the forward's parameters
// whose root is tuple(loss, d loss / d parameter_0, ...) for every
// floating-point parameter in parameter order (zeros where nothing flows).
Module build_gradient_module(const Module& forward, RematChoice remat = {});

}  // namespace podsim::compiler
