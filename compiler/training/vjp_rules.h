// Per-op vector-Jacobian products for arrays (internal to autodiff): given
// the adjoint g of an instruction's result, the contributions to the
// adjoints of its operands.
#pragma once

#include <vector>

#include "compiler/ir/builder.h"
#include "compiler/training/ir_helpers.h"
#include "compiler/training/remat.h"

namespace podsim::compiler::training {

struct VjpContext {
  ComputationBuilder& b;
  ReducerCache& reducers;
  const Module& module;  // called computations (reduce / scatter bodies)
  const Computation& source;
  ResidualProvider& residuals;
  // active[i]: source instruction i needs an adjoint (rules skip the rest).
  const std::vector<bool>& active;
};

struct OperandAdjoint {
  int operand = 0;
  InstrId adjoint = kNoId;
};

// UserError for an op autodiff does not support.
std::vector<OperandAdjoint> array_vjp(VjpContext& ctx, InstrId id, InstrId g);

// What a reduce/scatter body computes: add, max, min, the second argument
// (overwrite) or something else.
enum class ReducerKind { kAdd, kMax, kMin, kOverwrite, kOther };
ReducerKind classify_reducer(const Computation& body);

}  // namespace podsim::compiler::training
