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

// The fused attention forward call (compiler/ir/flash_attention.h), given the
// adjoints of its results (o, lse): the backward call on q, k, v and the
// saved (or, under full remat, recomputed) o and lse gives dq, dk, dv.
// UserError for an adjoint of lse (nothing downstream of the kernel reads it).
std::vector<OperandAdjoint> flash_attention_vjp(VjpContext& ctx, InstrId id,
                                                const std::vector<InstrId>& result_adjoints);

// What a reduce/scatter body computes: add, max, min, the second argument
// (overwrite) or something else.
enum class ReducerKind { kAdd, kMax, kMin, kOverwrite, kOther };
ReducerKind classify_reducer(const Computation& body);

}  // namespace podsim::compiler::training
