// Dot-like partitioning shared by the dot and convolution handlers
// (docs/reference/gspmd.md#dot-strategies, #convolution, internal): executes a DotPlan chosen by
// dot_strategies.h and the windowed-einsum loop that can replace its
// all-gather.
#pragma once

#include <functional>
#include <utility>
#include <vector>

#include "compiler/spmd/dot_strategies.h"
#include "compiler/spmd/spmd_handlers.h"

namespace podsim::compiler {

// Partitions `in.original` (a dot, or a convolution whose spatial dims stay
// whole) described by `spec`: reshard operands to the cheapest plan, local
// op (or windowed loop), combine partial sums, reshard to the target.
// A sparse dot's metadata travels with its stored operand (`side`): same
// rank, same sharding, one metadata element per `values_per_element` stored
// values along the sparse dim (docs/hlo-input.md#sparse-dot).
struct SparseOperand {
  int side = 0;
  int64_t dim = 0;
  int64_t group = 1;               // n: a shard boundary must not split a group
  int64_t values_per_element = 1;  // stored values per metadata element
  PartitionedValue metadata;
};
PartitionedValue partition_einsum(SpmdContext& context, const HandlerInput& in,
                                  const EinsumSpec& spec, const SparseOperand* sparse = nullptr);

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
  bool bidirectional = false;   // halves of the shard travel both ways round the ring
};
// Returns the local result: as the plain local dot of the plan would be
// (partial sums still to combine when the plan has them).
InstrId emit_windowed_dot(SpmdContext& context, const WindowedDot& w);

// The reduce-scatter form of the windowed einsum (windowed_reduce_scatter.cc): the plan's
// partial sums over `groups` (p devices) would be reduce-scattered onto
// result dim `out_dim`; instead the partial result block rotates round the
// ring, each device adding its contribution to the block it holds.
struct WindowedReduceScatter {
  const Instruction* original = nullptr;
  InstrId lhs = kNoId, rhs = kNoId;  // operands as the plan needs them (masked)
  int sliced_side = 0;               // operand carrying out_dim's label
  int64_t sliced_dim = 0;            // its dim
  int64_t out_dim = 0;
  ReplicaGroups groups;
  Sharding target;  // device k of each group holds tile k of out_dim
  Shape base_shape;
  bool bidirectional = false;  // halves of each block travel both ways round the ring
};
InstrId emit_windowed_reduce_scatter(SpmdContext& context, const WindowedReduceScatter& w);

// Shared by both loops (windowed_einsum.cc).
// Local result dims of `original` on operands of these shapes.
std::vector<int64_t> infer_local_dims(SpmdContext& context, const Instruction& original,
                                      const Shape& lhs, const Shape& rhs);
// Pairs that move a value from group position j + 1 to j (mod p) in every
// group (direction +1), or from j to j + 1 (direction -1).
std::vector<std::pair<int64_t, int64_t>> ring_pairs(const SpmdContext& context,
                                                    const ReplicaGroups& groups,
                                                    int64_t direction = 1);
// Step of a counted loop: (body builder, state elements incl. the counter
// last, counter + 1) -> new state elements without the counter.
using LoopStep =
    std::function<std::vector<InstrId>(ComputationBuilder&, const std::vector<InstrId>&, InstrId)>;
// while (i < trips) over (elements..., i = 0); returns the final elements.
std::vector<InstrId> emit_counted_loop(SpmdContext& context, std::vector<InstrId> elements,
                                       int64_t trips, const LoopStep& step);

}  // namespace podsim::compiler
