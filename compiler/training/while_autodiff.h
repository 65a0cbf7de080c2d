// Autodiff of while loops (internal to autodiff): the adjoint of a counted
// loop is a reverse loop (see while_autodiff.cc for the supported form).
#pragma once

#include <vector>

#include "compiler/ir/builder.h"
#include "compiler/training/ir_helpers.h"
#include "compiler/training/remat.h"

namespace podsim::compiler {

struct WhileAdjointContext {
  ComputationBuilder& b;
  training::ReducerCache& reducers;
  const Computation& source;
  InstrId while_id;  // in source
  ResidualProvider& residuals;
  const std::vector<InstrId>& forward_map;
  RematChoice remat;
};

struct WhileAdjoint {
  // Adjoint of each element of the loop's init tuple (kNoId = zero).
  std::vector<InstrId> init_element_adjoints;
};

WhileAdjoint emit_while_adjoint(const WhileAdjointContext& context,
                                const std::vector<InstrId>& result_element_adjoints);

}  // namespace podsim::compiler
