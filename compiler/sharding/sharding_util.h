// The sharding algebra (docs/reference/gspmd.md#sharding-algebra): pure functions over
// Sharding values and plain dim lists, shared by propagation and the
// partitioner. Every result is canonical (built through Sharding's
// factories). Results carry no shard group or metadata.
//
// Conventions: "dims" are tensor (data) dims; a leaf that is not tiled
// (replicated, maximal, manual, unknown) passes through unchanged unless said
// otherwise. Preconditions that only a bug can break are asserts.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "compiler/sharding/sharding.h"

namespace podsim::compiler {

// ---- Dimension moves (sharding_util.cc) ----

// Output data dim i takes the tiling of input dim perm[i] (as a transpose op
// with that permutation); subgroup dims are kept.
Sharding transpose_sharding(const Sharding& sharding, std::span<const int64_t> perm);

// Reverses the tile array along `dims`: the device holding the last tile of
// such a dim now holds the first (as a reverse op).
Sharding reverse_sharding(const Sharding& sharding, std::span<const int64_t> dims);

// Makes `dims` unsharded by moving their tile counts into the replication
// group; {replicated} if nothing stays tiled and there are no manual dims.
Sharding partially_replicate_on_dims(const Sharding& sharding, std::span<const int64_t> dims);
// The complement: keeps only the tiling of `keep`.
Sharding partially_replicate_on_all_dims_except(const Sharding& sharding,
                                                std::span<const int64_t> keep);
// Unshards every data dim but keeps manual subgroups ({replicated} without).
Sharding replicate_all_data_dims(const Sharding& sharding);

// Across a manual conversion (SPMDFullToShardShape / SPMDShardToFullShape) the
// automatic side's tiling of data dim `d` is the manual side's manual
// subgroup. data_dim_to_manual: [.., k at d, .. (, rep)] -> [.., 1 at d, ..
// (, rep), manual k]; manual_to_data_dim: the inverse (d tiled t ways on
// the manual side becomes k*t tiles, manual index major). Devices move with
// their tiles; nullopt where the forms do not fit (no tiling at d, other
// subgroup kinds).
std::optional<Sharding> data_dim_to_manual(const Sharding& sharding, int64_t d);
std::optional<Sharding> manual_to_data_dim(const Sharding& sharding, int64_t d);

// Removes data dims that have tile count 1 (assert) from a tiled sharding.
Sharding remove_shape_dims(const Sharding& sharding, std::span<const int64_t> dims);
// Inserts unsharded data dims so that they sit at `positions` of the result
// (ascending indices into the output rank).
Sharding add_shape_dims(const Sharding& sharding, std::span<const int64_t> positions);

// A transpose where some source dims vanish (src_to_tgt[i] == -1, allowed
// only when unsharded, else nullopt) and some target dims are new
// (tgt_to_src[j] == -1, tile count 1). The two maps must agree.
std::optional<Sharding> transpose_with_collapsed_dims(const Sharding& sharding,
                                                      std::span<const int64_t> src_to_tgt,
                                                      std::span<const int64_t> tgt_to_src);

// The generic dimension correspondence: source dim source_dims[i] is target
// dim target_dims[i] of a rank-target_rank tensor.
struct DimCorrespondence {
  std::vector<int64_t> source_dims;
  std::vector<int64_t> target_dims;
  int64_t target_rank = 0;
};
// Keeps the tiling of the corresponding dims (moved to their target dims),
// partially replicates every other source dim; other target dims get 1.
Sharding propagate_along_dims_and_replicate_others(const Sharding& sharding,
                                                   const DimCorrespondence& dims);

// Moves all tiles of data dim `source_dim` into `target_dim`: tile counts
// [a,b,c,d] with (1 -> 3) become [a,1,c,d*b], the moved count minor.
Sharding move_and_merge_tiles(const Sharding& sharding, int64_t source_dim, int64_t target_dim);
// The first dim (other than source_dim) whose size is divisible by its tile
// count times source_dim's, i.e. that can absorb source_dim's tiles evenly.
std::optional<int64_t> first_target_dim_to_move_tiles(std::span<const int64_t> dims,
                                                      const Sharding& sharding, int64_t source_dim);

// ---- Reshape (sharding_reshape.cc) ----

// Strict reshape rule (docs/reference/gspmd.md#reshape-sharding): size-1 dims inserted/removed (a
// sharded size-1 dim becomes replication), merges where only the most major merged dim is sharded,
// splits that hand the tile count to the major-most target dims (gcd fallback; leftover becomes
// replication), any reshape of unsharded dims. nullopt when a sharded dim is uneven where it must
// be divided, or no tiling survives.
std::optional<Sharding> reshape_sharding(std::span<const int64_t> source_dims,
                                         std::span<const int64_t> target_dims,
                                         const Sharding& sharding);
// Permissive rule: the strict rule if it applies; otherwise the reshape is
// cut into independent blocks (dim ranges with equal element counts) and
// each block's tiling is reshaped on its own, merging what survives; all
// else becomes replication. Never fails.
Sharding propagate_through_reshape(std::span<const int64_t> source_dims,
                                   std::span<const int64_t> target_dims, const Sharding& sharding);

// ---- Merging and ordering (sharding_merge.cc) ----

// Combines two (partially replicated) shardings into one at least as fine as
// both: per dim equal counts stay, a 1 takes the other's count, two
// different counts > 1 are incompatible. Each device of a new tile must lie
// in the tiles it had under both inputs; nullopt if no such arrangement
// exists or it has fewer than min_tiles tiles.
std::optional<Sharding> merge_if_compatible(const Sharding& a, const Sharding& b,
                                            int64_t min_tiles = 0);

// The partial order of docs/reference/gspmd.md#which-sharding-is-better: is `a` strictly more
// specific than `b`?
bool is_more_specific(const Sharding& a, const Sharding& b);

struct MergeOutcome {
  Sharding sharding;      // dst, possibly combined with to_merge
  bool dst_wins = false;  // true: use `sharding` instead of to_merge
};
// XLA's MergeSharding: when allowed and both are partial with the same device
// count, try a combination with strictly more tiles (dst_wins, combined);
// else dst_wins iff dst is more specific than to_merge. Tuples leaf-wise.
MergeOutcome merge_sharding(const Sharding& to_merge, const Sharding& dst,
                            bool may_combine_partial);

// Does every device's tile under `sub` lie inside its tile under `sharding`
// (tensor dims `dims`, ceil-division extents; padding-only tiles count as
// contained)? Manual on either side -> false.
bool is_subtiling_or_equal(std::span<const int64_t> dims, const Sharding& sub,
                           const Sharding& sharding);

// Folds merge_if_compatible over the list; on any conflict returns
// `fallback` if given, else the first sharding. Empty list: fallback or
// {replicated}.
Sharding find_common_sharding(std::span<const Sharding> shardings,
                              const std::optional<Sharding>& fallback = std::nullopt);

}  // namespace podsim::compiler
