// reduce_scatter_partial (docs/reference/gspmd.md#dot-strategies: "contracting (all-reduce
// or reduce-scatter)"): all-reduce + dynamic-slice of dim e equals a
// reduce-scatter along e when device k of every reduction group is the one
// holding tile k of e under the target, and nothing else changes. When the
// target's tile index along e is only part of the position in the group
// (e.g. the fsdp axis of a data x fsdp group), split_reduce_scatter turns it
// into a reduce-scatter over that part and an all-reduce of the shard over
// the rest (XLA's all-reduce splitter, docs/collectives.md#split-gradient-reductions).
#include <algorithm>
#include <utility>

#include "compiler/spmd/dot_strategies.h"
#include "compiler/spmd/reshard.h"

namespace podsim::compiler {
namespace {

// The elementary digits of every piece list's boundaries (tile_coordinates.h
// DigitGrid); nullopt unless they form a divisibility chain up to `devices`.
std::optional<DigitGrid> grid_of(const std::vector<const DigitPieces*>& functions,
                                 int64_t devices) {
  DigitGrid grid;
  grid.bounds = {1, devices};
  for (const DigitPieces* pieces : functions)
    for (const auto& f : *pieces) {
      grid.bounds.push_back(f.stride);
      grid.bounds.push_back(f.stride * f.size);
    }
  auto& bounds = grid.bounds;
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  if (bounds.back() != devices) return std::nullopt;
  for (size_t j = 0; j + 1 < bounds.size(); ++j)
    if (bounds[j + 1] % bounds[j] != 0) return std::nullopt;
  return grid;
}

// The devices that differ only in `digits`, member k having digit value k,
// as iota replica groups.
std::optional<ReplicaGroups> groups_of_digits(const DigitGrid& grid, const DigitIds& digits) {
  const TileAssignment rows = groups_from_digits(grid, digits);
  const auto form = rows.iota_form();
  if (!form) return std::nullopt;
  ReplicaGroups groups;
  groups.iota = IotaGroups{rows.dim(0), rows.dim(1), form->reshape_dims, form->transpose_perm};
  return groups;
}

}  // namespace

std::optional<SplitReduceScatter> split_reduce_scatter(const Sharding& from, const Sharding& to,
                                                       const ReplicaGroups& groups, int64_t rank,
                                                       int64_t devices) {
  if (!to.is_tiled() || (!from.is_tiled() && !from.is_replicated())) return std::nullopt;
  std::vector<int64_t> changed;
  for (int64_t d = 0; d < rank; ++d)
    if (tile_count(from, d) != tile_count(to, d)) changed.push_back(d);
  if (changed.size() != 1) return std::nullopt;
  const int64_t e = changed[0];
  const int64_t g = groups.group_size(devices), s = tile_count(to, e);
  if (tile_count(from, e) != 1 || s <= 1 || s >= g || g % s != 0) return std::nullopt;
  // As digit functions of the device id: the target's coordinate along e
  // must be made of digits of the position in the group, every other
  // coordinate must stay. Explicit arrays or groups keep the all-reduce.
  const auto group_fn = group_digit_pieces(groups, devices);
  const auto a = tile_coordinate_pieces(from, rank), b = tile_coordinate_pieces(to, rank);
  if (!group_fn || !a || !b) return std::nullopt;
  for (int64_t d = 0; d < rank; ++d)
    if (d != e && (*a)[static_cast<size_t>(d)] != (*b)[static_cast<size_t>(d)]) return std::nullopt;
  const DigitPieces& target_e = (*b)[static_cast<size_t>(e)];
  const auto grid = grid_of({&group_fn->first, &group_fn->second, &target_e}, devices);
  if (!grid) return std::nullopt;
  const DigitIds position = grid->digits_of(group_fn->second);
  const DigitIds tile = grid->digits_of(target_e);
  DigitIds rest;
  for (size_t j : position)
    if (std::find(tile.begin(), tile.end(), j) == tile.end()) rest.push_back(j);
  for (size_t j : tile)
    if (std::find(position.begin(), position.end(), j) == position.end()) return std::nullopt;
  if (grid->product(tile) != s || rest.empty()) return std::nullopt;
  auto scatter = groups_of_digits(*grid, tile), across = groups_of_digits(*grid, rest);
  if (!scatter || !across) return std::nullopt;
  return SplitReduceScatter{e, std::move(*scatter), std::move(*across)};
}

PartitionedValue reduce_scatter_partial(SpmdContext& context, const PartialValue& partial,
                                        const Sharding& target) {
  auto& b = context.builder();
  const int64_t rank = partial.base_shape.rank();
  std::optional<SplitReduceScatter> split;
  int64_t e =
      reduce_scatter_dim(partial.sharding, target, partial.groups, rank, context.num_devices());
  if (e < 0) {
    split =
        split_reduce_scatter(partial.sharding, target, partial.groups, rank, context.num_devices());
    if (split) e = split->dim;
  }
  if (e >= 0) {
    const int64_t g = tile_count(target, e);
    const int64_t full = partial.base_shape.dim(static_cast<int>(e));
    const int64_t padded = g * ((full + g - 1) / g);
    InstrId x = partial.id;
    if (padded != full) {
      std::vector<PadDim> padding(static_cast<size_t>(rank));
      padding[static_cast<size_t>(e)].high = padded - full;
      x = b.pad(x, context.zero(partial.base_shape.dtype()), std::move(padding));
    }
    if (!split) {
      InstrId scattered = b.reduce_scatter(x, e, partial.groups, partial.reducer);
      return PartitionedValue{scattered, partial.base_shape, target};
    }
    // Reduce-scatter first, then all-reduce the shard: the order of XLA's
    // all-reduce splitter, so the second collective moves 1/s of the bytes.
    InstrId scattered = b.reduce_scatter(x, e, split->scatter, partial.reducer);
    InstrId summed = b.all_reduce(scattered, split->across, partial.reducer);
    return PartitionedValue{summed, partial.base_shape, target};
  }
  InstrId summed = b.all_reduce(partial.id, partial.groups, partial.reducer);
  return reshard(context, PartitionedValue{summed, partial.base_shape, partial.sharding}, target);
}

}  // namespace podsim::compiler
