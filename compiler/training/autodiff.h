// Reverse-mode automatic differentiation on the IR: emit_gradients() appends the backward pass of
// a source computation to a builder holding the forward values (one reverse-topological pass;
// residuals through a ResidualProvider, remat.h). Ops without a rule on a path from a parameter
// to the loss are a UserError. Differentiated ops: docs/compiler.md#autodiff
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
