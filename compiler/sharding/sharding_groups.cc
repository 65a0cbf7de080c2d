// Grouped shardings: group / ungroup / group on replication / align.
// Grouping reshapes the tile array so every group dim splits into
// [groups (major), kept shards (minor)], transposes the group parts to the
// front and reads one device group per row; the inner sharding is the rest
// of the array with an iota assignment. Ungrouping rebuilds the array from
// the groups and the inner assignment and undoes the transpose.
#include "compiler/sharding/sharding_groups.h"

#include <algorithm>
#include <cassert>
#include <map>

#include "compiler/sharding/sharding_util.h"

namespace podsim::compiler {
namespace {

// The inner sharding as a tile array over `data_rank` data dims plus typed
// trailing dims, for `group_size` positions.
struct ExpandedTiles {
  TileAssignment tiles;
  std::vector<SubgroupType> types;
};
ExpandedTiles expand(const Sharding& inner, int64_t data_rank, int64_t group_size) {
  if (inner.is_tiled()) return {inner.tile_assignment(), inner.subgroup_types()};
  assert((inner.is_replicated() || inner.is_manual()) && "cannot ungroup this inner sharding");
  std::vector<int64_t> dims(static_cast<size_t>(data_rank), 1);
  dims.push_back(group_size);
  return {TileAssignment::iota(dims),
          {inner.is_manual() ? SubgroupType::kManual : SubgroupType::kReplicated}};
}

}  // namespace

GroupedSharding group_sharding_on_dims(const Sharding& sharding,
                                       std::span<const int64_t> group_dims,
                                       std::span<const int64_t> group_dim_shards) {
  assert(sharding.is_tiled());
  const auto& tiles = sharding.tile_assignment();
  const int64_t rank = tiles.rank();
  std::vector<int64_t> shards(group_dims.size(), 1);
  for (size_t q = 0; q < group_dim_shards.size(); ++q) shards[q] = group_dim_shards[q];

  std::vector<int64_t> expanded;
  std::vector<int64_t> group_part_pos(group_dims.size());
  std::vector<int64_t> inner_pos(static_cast<size_t>(rank));
  std::vector<int64_t> inner_dims;
  GroupedSharding grouped;
  grouped.group_dims.assign(group_dims.begin(), group_dims.end());
  grouped.data_rank = sharding.tiled_data_rank();
  for (int64_t d = 0; d < rank; ++d) {
    const auto it = std::find(group_dims.begin(), group_dims.end(), d);
    if (it != group_dims.end()) {
      const auto q = static_cast<size_t>(it - group_dims.begin());
      assert(tiles.dim(d) % shards[q] == 0);
      group_part_pos[q] = static_cast<int64_t>(expanded.size());
      expanded.push_back(tiles.dim(d) / shards[q]);
      inner_dims.push_back(shards[q]);
    } else {
      inner_dims.push_back(tiles.dim(d));
    }
    inner_pos[static_cast<size_t>(d)] = static_cast<int64_t>(expanded.size());
    expanded.push_back(inner_dims.back());
  }
  std::vector<int64_t> perm(group_part_pos.begin(), group_part_pos.end());
  for (size_t q = 0; q < group_dims.size(); ++q) {
    grouped.group_dim_sizes.push_back(expanded[static_cast<size_t>(group_part_pos[q])]);
  }
  perm.insert(perm.end(), inner_pos.begin(), inner_pos.end());
  const auto values = tiles.reshape(expanded).transpose(perm).to_vector();
  const int64_t group_size = product_of(inner_dims);
  for (size_t start = 0; start < values.size(); start += static_cast<size_t>(group_size)) {
    grouped.device_groups.emplace_back(
        values.begin() + static_cast<std::ptrdiff_t>(start),
        values.begin() + static_cast<std::ptrdiff_t>(start) + group_size);
  }
  grouped.inner = Sharding::subgroup(TileAssignment::iota(inner_dims), sharding.subgroup_types());
  return grouped;
}

Sharding ungroup_sharding(const GroupedSharding& grouped) {
  assert(!grouped.device_groups.empty());
  const auto group_size = static_cast<int64_t>(grouped.device_groups[0].size());
  const ExpandedTiles inner = expand(grouped.inner, grouped.data_rank, group_size);
  assert(inner.tiles.num_elements() == group_size);
  const auto m = static_cast<int64_t>(grouped.group_dims.size());

  std::vector<int64_t> values;
  const auto positions = inner.tiles.to_vector();
  for (const auto& group : grouped.device_groups) {
    for (int64_t p : positions) values.push_back(group[static_cast<size_t>(p)]);
  }
  std::vector<int64_t> full_dims = grouped.group_dim_sizes;
  full_dims.insert(full_dims.end(), inner.tiles.dims().begin(), inner.tiles.dims().end());

  std::vector<int64_t> perm;
  std::vector<int64_t> new_dims;
  auto group_of = [&](int64_t d) -> int64_t {
    for (int64_t q = 0; q < m; ++q) {
      if (grouped.group_dims[static_cast<size_t>(q)] == d) return q;
    }
    return -1;
  };
  for (int64_t d = 0; d < grouped.data_rank; ++d) {
    const int64_t q = group_of(d);
    int64_t size = inner.tiles.dim(d);
    if (q >= 0) {
      perm.push_back(q);
      size *= grouped.group_dim_sizes[static_cast<size_t>(q)];
    }
    perm.push_back(m + d);
    new_dims.push_back(size);
  }
  for (int64_t d = grouped.data_rank; d < inner.tiles.rank(); ++d) {
    perm.push_back(m + d);
    new_dims.push_back(inner.tiles.dim(d));
  }
  auto types = inner.types;
  for (int64_t q = 0; q < m; ++q) {
    if (grouped.group_dims[static_cast<size_t>(q)] < grouped.data_rank) continue;
    perm.push_back(q);
    new_dims.push_back(grouped.group_dim_sizes[static_cast<size_t>(q)]);
    types.push_back(SubgroupType::kReplicated);
  }
  return Sharding::subgroup(
      TileAssignment::from_devices(full_dims, std::move(values)).transpose(perm).reshape(new_dims),
      types);
}

GroupedSharding group_sharding_on_replicated_dim(const Sharding& sharding,
                                                 const ReplicatedGrouping& request) {
  const int64_t num_groups = request.num_groups;
  auto try_group = [&](const Sharding& s) -> std::optional<GroupedSharding> {
    const int64_t rep = s.subgroup_replication_dim();
    if (rep < 0 || s.tile_assignment().dim(rep) % num_groups != 0) return std::nullopt;
    const int64_t dims[] = {rep};
    const int64_t shards[] = {s.tile_assignment().dim(rep) / num_groups};
    return group_sharding_on_dims(s, dims, shards);
  };
  int64_t num_devices = request.num_devices;
  int64_t data_rank = request.data_rank;
  if (sharding.is_tiled()) {
    num_devices = sharding.total_num_tiles();
    data_rank = sharding.tiled_data_rank();
    Sharding current = sharding;
    if (auto g = try_group(current)) return *g;
    for (int64_t d : request.replicable_dims) {
      const int64_t dims[] = {d};
      current = partially_replicate_on_dims(current, dims);
      if (!current.is_tiled()) break;
      if (auto g = try_group(current)) return *g;
    }
  }
  assert(num_devices % num_groups == 0);
  GroupedSharding grouped;
  grouped.group_dims = {data_rank};
  grouped.group_dim_sizes = {num_groups};
  grouped.data_rank = data_rank;
  grouped.inner = Sharding::replicated();
  const int64_t size = num_devices / num_groups;
  for (int64_t r = 0; r < num_groups; ++r) {
    std::vector<int64_t> group;
    for (int64_t p = 0; p < size; ++p) group.push_back(r * size + p);
    grouped.device_groups.push_back(std::move(group));
  }
  return grouped;
}

std::optional<GroupedSharding> align_groups_with(const GroupedSharding& g,
                                                 const GroupedSharding& ref,
                                                 bool ignore_group_order) {
  if (g.device_groups.size() != ref.device_groups.size()) return std::nullopt;
  std::map<int64_t, std::pair<size_t, int64_t>> ref_place;  // device -> (group, position)
  for (size_t r = 0; r < ref.device_groups.size(); ++r) {
    for (size_t p = 0; p < ref.device_groups[r].size(); ++p) {
      ref_place[ref.device_groups[r][p]] = {r, static_cast<int64_t>(p)};
    }
  }
  std::vector<int64_t> position_map;  // g position -> ref position
  std::vector<bool> ref_used(ref.device_groups.size(), false);
  for (size_t k = 0; k < g.device_groups.size(); ++k) {
    const auto& group = g.device_groups[k];
    if (group.empty()) return std::nullopt;
    const auto first = ref_place.find(group[0]);
    if (first == ref_place.end()) return std::nullopt;
    const size_t r = first->second.first;
    if (ref_used[r] || (!ignore_group_order && r != k) ||
        group.size() != ref.device_groups[r].size()) {
      return std::nullopt;
    }
    ref_used[r] = true;
    std::vector<int64_t> map;
    for (int64_t device : group) {
      const auto it = ref_place.find(device);
      if (it == ref_place.end() || it->second.first != r) return std::nullopt;
      map.push_back(it->second.second);
    }
    if (k == 0) {
      position_map = std::move(map);
    } else if (map != position_map) {
      return std::nullopt;
    }
  }
  GroupedSharding aligned = g;
  aligned.device_groups = ref.device_groups;
  if (g.inner.is_tiled()) {
    std::vector<int64_t> renamed;
    for (int64_t p : g.inner.tile_assignment().to_vector()) {
      renamed.push_back(position_map[static_cast<size_t>(p)]);
    }
    aligned.inner = Sharding::subgroup(
        TileAssignment::from_devices(g.inner.tile_assignment().dims(), std::move(renamed)),
        g.inner.subgroup_types());
  }
  return aligned;
}

bool device_groups_match(const GroupedSharding& a, const GroupedSharding& b) {
  auto normalised = [](std::vector<std::vector<int64_t>> groups) {
    for (auto& group : groups) std::sort(group.begin(), group.end());
    std::sort(groups.begin(), groups.end());
    return groups;
  };
  return normalised(a.device_groups) == normalised(b.device_groups);
}

}  // namespace podsim::compiler
