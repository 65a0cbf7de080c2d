// reduce_scatter_partial (gspmd-algorithms.md 3.4: "contracting (all-reduce
// or reduce-scatter)"): all-reduce + dynamic-slice of dim e equals a
// reduce-scatter along e when device k of every reduction group is the one
// holding tile k of e under the target, and nothing else changes.
#include <algorithm>

#include "compiler/spmd/reshard.h"

namespace podsim::compiler {
namespace {

std::vector<int64_t> tile_index_or_zero(const Sharding& s, int64_t device, int64_t rank) {
  if (!s.is_tiled()) return std::vector<int64_t>(static_cast<size_t>(rank), 0);
  return *s.tile_index_for_device(device);
}

// The dim e a reduce-scatter over `groups` turns `from` into `to`, if any.
std::optional<int64_t> scatter_dim(const Sharding& from, const Sharding& to, const ReplicaGroups& groups,
                                   int64_t rank, int64_t devices) {
  if (!to.is_tiled() || (!from.is_tiled() && !from.is_replicated())) return std::nullopt;
  std::vector<int64_t> changed;
  for (int64_t d = 0; d < rank; ++d)
    if (tile_count(from, d) != tile_count(to, d)) changed.push_back(d);
  if (changed.size() != 1) return std::nullopt;
  const int64_t e = changed[0];
  const auto expanded = groups.expand(devices);
  const int64_t g = groups.group_size(devices);
  if (tile_count(from, e) != 1 || tile_count(to, e) != g) return std::nullopt;
  for (const auto& group : expanded) {
    for (int64_t k = 0; k < static_cast<int64_t>(group.size()); ++k) {
      const int64_t device = group[static_cast<size_t>(k)];
      std::vector<int64_t> a = tile_index_or_zero(from, device, rank), b = tile_index_or_zero(to, device, rank);
      if (b[static_cast<size_t>(e)] != k) return std::nullopt;
      a[static_cast<size_t>(e)] = b[static_cast<size_t>(e)];
      if (a != b) return std::nullopt;
    }
  }
  return e;
}

}  // namespace

PartitionedValue reduce_scatter_partial(SpmdContext& context, const PartialValue& partial, const Sharding& target) {
  auto& b = context.builder();
  const int64_t rank = partial.base_shape.rank();
  if (auto e = scatter_dim(partial.sharding, target, partial.groups, rank, context.num_devices())) {
    const int64_t g = tile_count(target, *e);
    const int64_t full = partial.base_shape.dim(static_cast<int>(*e));
    const int64_t padded = g * ((full + g - 1) / g);
    InstrId x = partial.id;
    if (padded != full) {
      std::vector<PadDim> padding(static_cast<size_t>(rank));
      padding[static_cast<size_t>(*e)].high = padded - full;
      x = b.pad(x, context.zero(partial.base_shape.dtype()), std::move(padding));
    }
    InstrId scattered = b.reduce_scatter(x, *e, partial.groups, partial.reducer);
    return PartitionedValue{scattered, partial.base_shape, target};
  }
  InstrId summed = b.all_reduce(partial.id, partial.groups, partial.reducer);
  return reshard(context, PartitionedValue{summed, partial.base_shape, partial.sharding}, target);
}

}  // namespace podsim::compiler
