// Sharding algebra: combining and ordering shardings (gspmd-algorithms.md
// 1.7 MergeShardingIfCompatible / MergeSharding / IsSubTilingOrEqual /
// FindCommonSharding, 2.3 "more specific").
//
// merge_if_compatible uses one exact method (ours): every device's new tile
// index is read off its tile indices under both inputs (a dim sharded on
// either side takes that side's index; sharded on both, they must agree);
// the merge exists iff every new tile (per manual group) then receives the
// same number of devices. Each device's new tile lies in both old tiles by
// construction; groups are sorted by the canonical factory.
#include <algorithm>
#include <cassert>
#include <map>

#include "compiler/sharding/sharding_util.h"

namespace podsim::compiler {

std::optional<Sharding> merge_if_compatible(const Sharding& a, const Sharding& b,
                                            int64_t min_tiles) {
  const Sharding lhs = a.without_group_and_metadata();
  const Sharding rhs = b.without_group_and_metadata();
  if (lhs.is_replicated() && rhs.is_tiled()) return rhs.num_tiles() >= min_tiles ? std::optional(rhs) : std::nullopt;
  if (rhs.is_replicated() && lhs.is_tiled()) return lhs.num_tiles() >= min_tiles ? std::optional(lhs) : std::nullopt;
  if (lhs == rhs) return lhs.num_tiles() >= min_tiles ? std::optional(lhs) : std::nullopt;
  if (!lhs.is_tiled() || !rhs.is_tiled()) return std::nullopt;
  const int64_t rank = lhs.tiled_data_rank();
  if (rank != rhs.tiled_data_rank() || lhs.total_num_tiles() != rhs.total_num_tiles()) {
    return std::nullopt;
  }
  const int64_t manual_a = lhs.subgroup_manual_dim(), manual_b = rhs.subgroup_manual_dim();
  const int64_t manual_size = manual_a >= 0 ? lhs.tile_assignment().dim(manual_a) : 1;
  if ((manual_a >= 0) != (manual_b >= 0) ||
      (manual_b >= 0 && rhs.tile_assignment().dim(manual_b) != manual_size)) {
    return std::nullopt;
  }
  const auto ta = lhs.data_tile_dims(), tb = rhs.data_tile_dims();
  std::vector<int64_t> merged(static_cast<size_t>(rank));
  for (size_t d = 0; d < merged.size(); ++d) {
    if (ta[d] != tb[d] && ta[d] != 1 && tb[d] != 1) return std::nullopt;
    merged[d] = std::max(ta[d], tb[d]);
  }
  const int64_t devices = lhs.total_num_tiles();
  const int64_t cells = product_of(merged) * manual_size;
  if (devices % cells != 0 || product_of(merged) < min_tiles) return std::nullopt;
  const int64_t group = devices / cells;
  // cell (row-major over merged dims, then manual index) -> its devices.
  std::vector<std::vector<int64_t>> members(static_cast<size_t>(cells));
  // Full tile index of every device under each input, one pass per array
  // (index_of on an explicit array would be a linear scan per device).
  auto indices_by_device = [](const TileAssignment& tiles) {
    std::map<int64_t, std::vector<int64_t>> out;
    std::vector<int64_t> index(static_cast<size_t>(tiles.rank()), 0);
    for (int64_t device : tiles.to_vector()) {
      out.emplace(device, index);
      for (int64_t d = tiles.rank(); d-- > 0;) {
        if (++index[static_cast<size_t>(d)] < tiles.dim(d)) break;
        index[static_cast<size_t>(d)] = 0;
      }
    }
    return out;
  };
  const auto a_index = indices_by_device(lhs.tile_assignment());
  const auto b_index = indices_by_device(rhs.tile_assignment());
  for (const auto& [device, index_a] : a_index) {
    const auto found_b = b_index.find(device);
    if (found_b == b_index.end()) return std::nullopt;
    const auto* ia = &index_a;
    const auto* ib = &found_b->second;
    int64_t cell = 0;
    for (size_t d = 0; d < merged.size(); ++d) {
      const int64_t xa = (*ia)[d], xb = (*ib)[d];
      if (ta[d] > 1 && tb[d] > 1 && xa != xb) return std::nullopt;
      cell = cell * merged[d] + (ta[d] > 1 ? xa : xb);
    }
    if (manual_a >= 0) {
      const int64_t ma = (*ia)[static_cast<size_t>(manual_a)];
      if (ma != (*ib)[static_cast<size_t>(manual_b)]) return std::nullopt;
      cell = cell * manual_size + ma;
    }
    auto& cell_devices = members[static_cast<size_t>(cell)];
    if (static_cast<int64_t>(cell_devices.size()) == group) return std::nullopt;
    cell_devices.push_back(device);
  }
  std::vector<int64_t> flat;
  for (const auto& cell_devices : members) flat.insert(flat.end(), cell_devices.begin(), cell_devices.end());
  std::vector<int64_t> dims = merged;
  std::vector<SubgroupType> types;
  if (manual_a >= 0) {
    dims.push_back(manual_size);
    types.push_back(SubgroupType::kManual);
  }
  dims.push_back(group);
  types.push_back(SubgroupType::kReplicated);
  return Sharding::subgroup(TileAssignment::from_devices(dims, std::move(flat)), types);
}

bool is_more_specific(const Sharding& a, const Sharding& b) {
  if (a.is_tuple()) {
    assert(b.is_tuple() && a.tuple_elements().size() == b.tuple_elements().size());
    bool better = false;
    for (size_t i = 0; i < a.tuple_elements().size(); ++i) {
      if (is_more_specific(b.tuple_elements()[i], a.tuple_elements()[i])) return false;
      better = better || is_more_specific(a.tuple_elements()[i], b.tuple_elements()[i]);
    }
    return better;
  }
  if (a.is_unknown()) return false;
  if (b.is_unknown()) return true;
  if (a.is_manual()) return b.is_tile_maximal();  // manual beats tile-maximal only
  if (b.is_manual()) return false;
  if (b.is_tiled()) return a.is_tiled() && a.num_tiles() > b.num_tiles();
  if (b.is_maximal()) return a.is_tiled();
  return !a.is_replicated();  // b replicated
}

MergeOutcome merge_sharding(const Sharding& to_merge, const Sharding& dst,
                            bool may_combine_partial) {
  if (to_merge.is_tuple()) {
    assert(dst.is_tuple() && dst.tuple_elements().size() == to_merge.tuple_elements().size());
    std::vector<Sharding> leaves;
    bool wins = false;
    for (size_t i = 0; i < dst.tuple_elements().size(); ++i) {
      auto leaf = merge_sharding(to_merge.tuple_elements()[i], dst.tuple_elements()[i],
                                 may_combine_partial);
      wins = wins || leaf.dst_wins;
      leaves.push_back(std::move(leaf.sharding));
    }
    return {Sharding::tuple(std::move(leaves)), wins};
  }
  if (may_combine_partial && to_merge.has_partial_replication() &&
      dst.has_partial_replication() && to_merge.total_num_tiles() == dst.total_num_tiles()) {
    const int64_t min_tiles = std::max(to_merge.num_tiles(), dst.num_tiles()) + 1;
    if (auto merged = merge_if_compatible(to_merge, dst, min_tiles)) return {*merged, true};
  }
  return {dst, is_more_specific(dst, to_merge)};
}

bool is_subtiling_or_equal(std::span<const int64_t> dims, const Sharding& sub,
                           const Sharding& sharding) {
  if (sub.is_manual() || sharding.is_manual()) return false;
  if (sharding.is_tile_maximal()) return true;
  if (sub.is_tile_maximal() || !sub.is_tiled() || !sharding.is_tiled()) return false;
  if (sub.total_num_tiles() != sharding.total_num_tiles()) return false;
  for (int64_t device : sharding.tile_assignment().to_vector()) {
    if (!sub.tile_assignment().index_of(device)) return false;
    const ShardRegion inner = shard_region(sub, dims, device);
    if (inner.empty()) continue;  // padding only: holds no data
    const ShardRegion outer = shard_region(sharding, dims, device);
    for (size_t d = 0; d < dims.size(); ++d) {
      if (inner.offsets[d] < outer.offsets[d] || inner.limits[d] > outer.limits[d]) return false;
    }
  }
  return true;
}

Sharding find_common_sharding(std::span<const Sharding> shardings,
                              const std::optional<Sharding>& fallback) {
  if (shardings.empty()) return fallback.value_or(Sharding::replicated());
  Sharding result = shardings[0].without_group_and_metadata();
  for (size_t i = 1; i < shardings.size(); ++i) {
    auto merged = merge_if_compatible(result, shardings[i]);
    if (!merged) return fallback.value_or(shardings[0]);
    result = *merged;
  }
  return result;
}

}  // namespace podsim::compiler
