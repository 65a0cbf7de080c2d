// Resharding planner (docs/reference/gspmd.md#resharding): converts a PartitionedValue to another
// sharding with small named steps (no-op, all-gather, local dynamic-slice, all-to-all,
// collective-permute, digit steps up to a relabeling, or replicate then slice), cached per
// (value, target). Partial sums are not a sharding here: handlers all-reduce them themselves.
// Which step serves which change: docs/compiler.md#reshard-steps
#pragma once

#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "compiler/spmd/reshard_plan.h"
#include "compiler/spmd/spmd_context.h"

namespace podsim::compiler {

PartitionedValue reshard(SpmdContext& context, const PartitionedValue& value,
                         const Sharding& target);

// Steps (exposed for tests and handlers).
PartitionedValue all_gather_dims(SpmdContext& context, const PartitionedValue& value,
                                 std::span<const int64_t> dims);
PartitionedValue slice_dims_locally(SpmdContext& context, const PartitionedValue& value,
                                    const Sharding& target, std::span<const int64_t> dims);
// (a, b) when target = source with dim a's n tiles moved to dim b, same
// device order; nullopt otherwise.
std::optional<std::pair<int64_t, int64_t>> all_to_all_dims(const Sharding& source,
                                                           const Sharding& target);
PartitionedValue all_to_all_move(SpmdContext& context, const PartitionedValue& value,
                                 const Sharding& target, int64_t a, int64_t b);
PartitionedValue permute_devices(SpmdContext& context, const PartitionedValue& value,
                                 const Sharding& target);

PartitionedValue apply_relabeled_digit_reshard(SpmdContext& context, const PartitionedValue& value,
                                               const RelabeledDigitPlan& plan,
                                               const Sharding& target);
// All-to-all that moves `factor` tiles from dim a (gaining extent) to dim b:
// b is padded to factor * b_chunk, split into chunks exchanged within
// `groups`, and the received chunks are merged into a (minor-most tiles
// become major sub-blocks of a), then a is sliced to a_extent if longer.
struct TileExchange {
  int64_t a = 0, b = 0, factor = 1;
  ReplicaGroups groups;
  int64_t b_chunk = 1;
  int64_t a_extent = 0;
};
InstrId exchange_tiles(SpmdContext& context, InstrId x, const TileExchange& exchange);
PartitionedValue apply_digit_reshard(SpmdContext& context, const PartitionedValue& value,
                                     const std::vector<DigitStep>& steps);
// Per-device partial results: `id` holds this device's partial value, laid
// out as `sharding` says, which `reducer` combines over `groups` (e.g. the
// local dot of a contracting-sharded einsum, a masked local gather).
struct PartialValue {
  InstrId id = kNoId;
  Shape base_shape;
  Sharding sharding;
  ReplicaGroups groups;
  CompId reducer = kNoId;
};
// Completes a partial value in `target` (reduce_scatter.cc): one
// reduce-scatter when the target adds the tiling of exactly one dim whose
// tile index on every device is its position in its group (an all-reduce
// followed by a local slice, fused); otherwise all-reduce, then reshard.
// When the target tiles that dim s ways, s a proper divisor of the group
// size, and each device's tile index along it is a part of its position in
// the group (digits of it, tile_coordinates.h; the rest unchanged), the
// all-reduce + slice is a reduce-scatter over `scatter` (the devices that
// differ only in those digits, member k holding tile k) and an all-reduce
// of the shard over `across` (the group's other digits): XLA's all-reduce
// splitter, docs/collectives.md#split-gradient-reductions.
PartitionedValue reduce_scatter_partial(SpmdContext& context, const PartialValue& partial,
                                        const Sharding& target);
struct SplitReduceScatter {
  int64_t dim = -1;
  ReplicaGroups scatter;
  ReplicaGroups across;
};
// The split above for a partial value in `from` summed over `groups`;
// nullopt when it does not apply (reduce_scatter_dim's case included).
std::optional<SplitReduceScatter> split_reduce_scatter(const Sharding& from, const Sharding& to,
                                                       const ReplicaGroups& groups, int64_t rank,
                                                       int64_t devices);
// Tuple values: leaf by leaf through get-tuple-element, then re-tupled
// (control_flow_handlers.cc).
PartitionedValue reshard_tuple(SpmdContext& context, const PartitionedValue& value,
                               const Sharding& target);

}  // namespace podsim::compiler
