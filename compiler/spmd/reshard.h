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
//   digits of the tile coordinates     -> digit steps (reshard_digits.cc):
//   (tile_coordinates.h) pass between     refine = local dynamic-slice,
//   dims or to/from replication           coarsen = all-gather within the
//                                         groups the digits define, move =
//                                         all-to-all; up to a relabeling of
//                                         equal-size digits, fixed by one
//                                         collective-permute before or after
//                                         (reshard_relabel.cc), cheapest plan
//   anything else                      -> replicate, then slice (counted in
//                                          SpmdStats::full_replications)
// Partial sums are not a sharding here: handlers all-reduce them themselves.
#pragma once

#include <optional>
#include <span>
#include <utility>
#include <vector>

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

// Refine/coarsen/move on the common digit grid of source and target
// (tile_coordinates.h). Per data dim d, with C the longest common prefix of
// the source's and target's coordinate digits, the source's digits after C
// are stripped from the minor end and the target's appended in order:
//   coarsen: strip digits P: all-gather within the groups P defines (P
//            then replicated);
//   refine:  append digits P replicated now: local dynamic-slice;
//   move:    strip P from dim a and append it to dim b in one all-to-all
//            within the P groups (a's trailing P = b's next P).
// Two greedy passes, each taking a step as soon as one applies: refines
// first (free, they shrink the shard), then either moves first (gathers
// only of digits that end replicated, and when nothing applies -- a digit
// must reach a non-minor place, or moves form a cycle -- of one blocked
// digit, which a later refine puts in place), or whole gathers first (a
// dim's stripped digits at once unless they are exactly another dim's next
// digits). The cheaper plan by digit_steps_cost wins, ties to the moves.
// Every step needs nested padded extents: ceil(D/c) == m * ceil(D/(c m))
// unless c == 1, c the product of the digits kept below the change; a
// gather that does not nest takes more digits with it.
struct DigitStep {
  enum class Kind { kCoarsen, kMove, kRefine };
  Kind kind = Kind::kCoarsen;
  int64_t dim = 0;       // coarsen/refine: the dim; move: the dim b that gains P
  int64_t from_dim = 0;  // move: the dim a that loses P
  int64_t factor = 1;    // m = product of P's digit sizes
  Sharding after;        // sharding once this step is done
  DigitPieces minor;     // refine: P's coordinate (0..m-1)
  ReplicaGroups groups;  // coarsen/move: member k holds sub-tile k
};
// nullopt when the pair is not on a common grid, nothing changes, a step's
// extents cannot nest, or a coarsen would replicate the value (that is the
// full-replication fallback, counted as such). element_bytes: the dtype's
// size, for the cost.
std::optional<std::vector<DigitStep>> plan_digit_reshard(const Sharding& source, const Sharding& target,
                                                         std::span<const int64_t> base_dims, int64_t devices,
                                                         int64_t element_bytes = 4);
// The same on a given grid: `from` and `to` are the data dims' digit lists.
std::optional<std::vector<DigitStep>> plan_digit_steps(const DigitGrid& grid, const std::vector<DigitIds>& from,
                                                       const std::vector<DigitIds>& to,
                                                       std::span<const int64_t> base_dims, int64_t element_bytes = 4);
// Cost of a plan, in bytes: per collective, the bytes a device receives
// (all-gather / all-to-all of group m: out * (m - 1) / m; a
// collective-permute: its shard -- XLA's CommunicationCostInBytes,
// gspmd-algorithms.md 3.2 message sizes) plus kCollectiveLatencyBytes;
// local slices are free.
// kCollectiveLatencyBytes = 1e5: the ~1 us ICI hop latency at 1e11 B/s per
// link (anchors.md, TPU hardware), so that on small shards fewer
// collectives win and on large ones fewer bytes.
constexpr double kCollectiveLatencyBytes = 1e5;
double digit_steps_cost(const std::vector<DigitStep>& steps, std::span<const int64_t> base_dims,
                        int64_t element_bytes);
// Digit steps up to a relabeling of equal-size digits (reshard_relabel.cc):
// the cheapest (digit_steps_cost + the permute's) over relabelings of
// plan_digit_steps plus, unless the relabeling is the identity on the
// target's lists, one collective-permute first (to `relabeled_source`) or
// last (to the target).
struct RelabeledDigitPlan {
  enum class Permute { kNone, kFirst, kLast };
  Permute permute = Permute::kNone;
  Sharding relabeled_source;  // kFirst: the sharding the permute produces
  std::vector<DigitStep> steps;
};
std::optional<RelabeledDigitPlan> plan_relabeled_digit_reshard(const Sharding& source, const Sharding& target,
                                                               std::span<const int64_t> base_dims, int64_t devices,
                                                               int64_t element_bytes = 4);
PartitionedValue apply_relabeled_digit_reshard(SpmdContext& context, const PartitionedValue& value,
                                               const RelabeledDigitPlan& plan, const Sharding& target);
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
PartitionedValue reduce_scatter_partial(SpmdContext& context, const PartialValue& partial, const Sharding& target);
// Tuple values: leaf by leaf through get-tuple-element, then re-tupled
// (control_flow_handlers.cc).
PartitionedValue reshard_tuple(SpmdContext& context, const PartitionedValue& value, const Sharding& target);

}  // namespace podsim::compiler
