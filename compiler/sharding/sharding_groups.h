// Grouped shardings (docs/reference/gspmd.md#sharding-algebra GroupShardingOnDims and
// friends): a sharding seen as independent device groups, each running the
// same inner sharding over in-group positions 0..g-1. This is what lets the
// partitioner recurse on sub-meshes (2-D/3-D meshes reuse 1-D strategies).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "compiler/sharding/sharding.h"

namespace podsim::compiler {

struct GroupedSharding {
  // device_groups[r][p] = device at in-group position p of group r.
  std::vector<std::vector<int64_t>> device_groups;
  // Tile dims the groups were taken from (data dims, or the replication
  // subgroup dim index == data_rank for grouping on replication).
  std::vector<int64_t> group_dims;
  std::vector<int64_t> group_dim_sizes;  // groups along each group dim
  int64_t data_rank = 0;
  Sharding inner;  // over positions 0..group size-1
};

// Splits tile dim group_dims[i] (count T) into T / group_dim_shards[i] groups
// (major part) x group_dim_shards[i] tiles kept in the inner sharding
// (shards default 1: the whole dim becomes groups). `sharding` is tiled;
// group dims are data dims or its replication dim (not a manual dim).
GroupedSharding group_sharding_on_dims(const Sharding& sharding,
                                       std::span<const int64_t> group_dims,
                                       std::span<const int64_t> group_dim_shards = {});

// Exact inverse of group_sharding_on_dims (the inner sharding may have been
// replaced by another sharding over the same positions).
Sharding ungroup_sharding(const GroupedSharding& grouped);

struct ReplicatedGrouping {
  int64_t num_groups = 1;
  // Data dims whose tiling may be turned into replication to find groups.
  std::vector<int64_t> replicable_dims;
  // For a replicated sharding (which carries neither): devices and rank.
  int64_t num_devices = 1;
  int64_t data_rank = 0;
};
// Groups on the replication dim (so groups hold copies of the same data):
// uses the existing replication dim when its size divides by num_groups,
// else partially replicates replicable dims (in order) until it does, else
// returns the all-replicated grouping (contiguous device ranges, inner
// {replicated}).
GroupedSharding group_sharding_on_replicated_dim(const Sharding& sharding,
                                                 const ReplicatedGrouping& request);

// Renames g's groups and inner positions so its device groups become ref's.
// Requires the same number of groups, each g group equal (as a set) to one
// ref group (the same index unless ignore_group_order), and one in-group
// position permutation shared by all groups; nullopt otherwise.
std::optional<GroupedSharding> align_groups_with(const GroupedSharding& g,
                                                 const GroupedSharding& ref,
                                                 bool ignore_group_order = true);

// Same groups as sets (order of groups and of members ignored).
bool device_groups_match(const GroupedSharding& a, const GroupedSharding& b);

}  // namespace podsim::compiler
