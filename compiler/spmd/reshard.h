// Resharding planner (gspmd-algorithms.md 3.2): converts a PartitionedValue
// to another sharding with small named steps, cached per (value, target):
//   same sharding                      -> no-op
//   target = source with dims unsharded -> all-gather per dim within groups of
//                                          devices sharing the other tile
//                                          coordinates, then slice off padding
//   source = target with dims unsharded -> local dynamic-slice at partition
//                                          offsets (pad uneven dims first)
//   tiling of n moves from dim a to b  -> all-to-all within groups along a
//   same tile dims, other device order -> collective-permute
//   anything else                      -> replicate, then slice (counted in
//                                          SpmdStats::full_replications)
// Partial sums are not a sharding here: handlers all-reduce them themselves.
#pragma once

#include <optional>
#include <span>
#include <utility>

#include "compiler/spmd/spmd_context.h"

namespace podsim::compiler {

PartitionedValue reshard(SpmdContext& context, const PartitionedValue& value, const Sharding& target);

// Steps (exposed for tests and handlers).
PartitionedValue all_gather_dims(SpmdContext& context, const PartitionedValue& value,
                                 std::span<const int64_t> dims);
PartitionedValue slice_dims_locally(SpmdContext& context, const PartitionedValue& value,
                                    const Sharding& target, std::span<const int64_t> dims);
// (a, b) when target = source with dim a's n tiles moved to dim b, same
// device order; nullopt otherwise.
std::optional<std::pair<int64_t, int64_t>> all_to_all_dims(const Sharding& source, const Sharding& target);
PartitionedValue all_to_all_move(SpmdContext& context, const PartitionedValue& value, const Sharding& target,
                                 int64_t a, int64_t b);
PartitionedValue permute_devices(SpmdContext& context, const PartitionedValue& value, const Sharding& target);

}  // namespace podsim::compiler
