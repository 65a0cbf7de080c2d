// Dot-like partitioning shared by the dot and convolution handlers
// (gspmd-algorithms.md 3.4-3.6, internal): executes a DotPlan chosen by
// dot_strategies.h and the windowed-einsum loop that can replace its
// all-gather.
#pragma once

#include "compiler/spmd/dot_strategies.h"
#include "compiler/spmd/spmd_handlers.h"

namespace podsim::compiler {

// Partitions `in.original` (a dot, or a convolution whose spatial dims stay
// whole) described by `spec`: reshard operands to the cheapest plan, local
// op (or windowed loop), combine partial sums, reshard to the target.
PartitionedValue partition_einsum(SpmdContext& context, const HandlerInput& in, const EinsumSpec& spec);

// One operand rotated round its device ring instead of all-gathered
// (windowed_einsum.cc). The plan needs `windowed` whole along `windowed_dim`
// (tiled p ways now, p = group size) and nothing else changed.
struct WindowedDot {
  const Instruction* original = nullptr;  // the local op to clone per step
  int windowed_side = 1;                  // 0: lhs, 1: rhs
  PartitionedValue windowed;              // in its current sharding
  int64_t windowed_dim = 0;
  InstrId other_local = kNoId;  // the other operand as the plan needs it
  int64_t other_dim = -1;       // contracting: the other operand's matching dim
  int64_t out_dim = -1;         // free dim: the result dim it becomes
};
// Returns the local result: as the plain local dot of the plan would be
// (partial sums still to combine when the plan has them).
InstrId emit_windowed_dot(SpmdContext& context, const WindowedDot& w);

}  // namespace podsim::compiler
