// Resharding steps; see reshard.h for the ladder and docs/reference/gspmd.md#resharding.
#include "compiler/spmd/reshard.h"

#include <algorithm>
#include <cassert>
#include <optional>
#include <utility>

#include "compiler/sharding/sharding_util.h"

namespace podsim::compiler {
namespace {

bool same_tile_shape(const Sharding& a, const Sharding& b) {
  return a.is_tiled() && b.is_tiled() && a.tile_assignment().dims() == b.tile_assignment().dims() &&
         a.subgroup_types() == b.subgroup_types();
}

}  // namespace

std::optional<std::pair<int64_t, int64_t>> all_to_all_dims(const Sharding& source,
                                                           const Sharding& target) {
  if (!source.is_tiled() || !target.is_tiled() ||
      source.subgroup_types() != target.subgroup_types())
    return std::nullopt;
  const auto& s = source.tile_assignment().dims();
  const auto& t = target.tile_assignment().dims();
  if (s.size() != t.size()) return std::nullopt;
  std::vector<int64_t> differing;
  for (size_t d = 0; d < s.size(); ++d)
    if (s[d] != t[d]) differing.push_back(static_cast<int64_t>(d));
  if (differing.size() != 2) return std::nullopt;
  int64_t a = differing[0], b = differing[1];
  if (s[static_cast<size_t>(a)] == 1) std::swap(a, b);
  const int64_t n = s[static_cast<size_t>(a)];
  if (n == 1 || s[static_cast<size_t>(b)] != 1 || t[static_cast<size_t>(a)] != 1 ||
      t[static_cast<size_t>(b)] != n)
    return std::nullopt;
  // Same devices in the same order: device of source tile (.., i@a, ..) holds
  // target tile (.., i@b, ..), other coordinates unchanged. Swapping tile
  // dims a (n) and b (1) says exactly that; a reshape would not when tiled
  // dims lie between a and b.
  std::vector<int64_t> swap_ab(s.size());
  for (size_t d = 0; d < s.size(); ++d) swap_ab[d] = static_cast<int64_t>(d);
  std::swap(swap_ab[static_cast<size_t>(a)], swap_ab[static_cast<size_t>(b)]);
  if (source.tile_assignment().transpose(swap_ab) != target.tile_assignment()) return std::nullopt;
  return std::make_pair(a, b);
}

// The whole tile count n of a moves to b: groups along tile dim a, chunks
// of ceil(Db/n), a ends at its logical extent.
PartitionedValue all_to_all_move(SpmdContext& context, const PartitionedValue& value,
                                 const Sharding& target, int64_t a, int64_t b) {
  const int64_t n = tile_count(value.sharding, a);
  const int64_t full_b = value.base_shape.dim(static_cast<int>(b));
  const int64_t axis[] = {a};
  const TileExchange exchange{a,
                              b,
                              n,
                              context.groups_along_tile_dims(value.sharding, axis),
                              (full_b + n - 1) / n,
                              value.base_shape.dim(static_cast<int>(a))};
  return PartitionedValue{exchange_tiles(context, value.id, exchange), value.base_shape, target};
}

// One all-gather per dim along the devices that differ only in that tile
// coordinate (chunk k of the result is tile k), then a slice to the logical
// extent removes the trailing padding of the last tile.
PartitionedValue all_gather_dims(SpmdContext& context, const PartitionedValue& value,
                                 std::span<const int64_t> dims) {
  auto& b = context.builder();
  InstrId current = value.id;
  for (int64_t dim : dims) {
    if (tile_count(value.sharding, dim) == 1) continue;
    const int64_t axis[] = {dim};
    current = b.all_gather(current, dim, context.groups_along_tile_dims(value.sharding, axis));
    const Shape gathered = context.local_shape(current);
    const int64_t logical = value.base_shape.dim(static_cast<int>(dim));
    if (gathered.dim(static_cast<int>(dim)) != logical) {
      std::vector<SliceDim> slice;
      for (int i = 0; i < gathered.rank(); ++i)
        slice.push_back(SliceDim{0, i == dim ? logical : gathered.dim(i), 1});
      current = b.slice(current, std::move(slice));
    }
  }
  return PartitionedValue{current, value.base_shape,
                          partially_replicate_on_dims(value.sharding, dims)};
}

// Source holds the full extent of `dims`: pad each to n * ceil(D/n) and
// dynamic-slice this device's tile at its offsets (other dims start at 0).
PartitionedValue slice_dims_locally(SpmdContext& context, const PartitionedValue& value,
                                    const Sharding& target, std::span<const int64_t> dims) {
  auto& b = context.builder();
  const auto& base = value.base_shape.dims();
  const std::vector<int64_t> target_shard = shard_shape(target, base);
  const Shape local = context.local_shape(value.id);
  std::vector<PadDim> padding(static_cast<size_t>(local.rank()));
  bool needs_pad = false;
  for (int64_t dim : dims) {
    const int64_t n = tile_count(target, dim);
    const int64_t padded = n * target_shard[static_cast<size_t>(dim)];
    padding[static_cast<size_t>(dim)].high = padded - local.dim(static_cast<int>(dim));
    needs_pad |= padded != local.dim(static_cast<int>(dim));
  }
  InstrId source = value.id;
  if (needs_pad) source = b.pad(source, context.zero(local.dtype()), std::move(padding));
  std::vector<InstrId> starts;
  for (int d = 0; d < local.rank(); ++d) {
    bool sliced = std::find(dims.begin(), dims.end(), d) != dims.end();
    starts.push_back(sliced ? context.partition_offset(target, base, d)
                            : context.zero(DType::kS32));
  }
  InstrId result = b.dynamic_slice(source, std::move(starts), target_shard);
  return PartitionedValue{result, value.base_shape, target};
}

// Tile t moves from the device holding it under the source to the one holding
// it under the target (replication copies included, position by position).
PartitionedValue permute_devices(SpmdContext& context, const PartitionedValue& value,
                                 const Sharding& target) {
  const TileAssignment& from = value.sharding.tile_assignment();
  const TileAssignment& to = target.tile_assignment();
  std::vector<std::pair<int64_t, int64_t>> pairs;
  for (int64_t p = 0; p < from.num_elements(); ++p)
    pairs.emplace_back(from.at_flat(p), to.at_flat(p));
  InstrId result = context.builder().collective_permute(value.id, std::move(pairs));
  return PartitionedValue{result, value.base_shape, target};
}

PartitionedValue reshard(SpmdContext& context, const PartitionedValue& value,
                         const Sharding& target) {
  if (value.sharding == target || value.base_shape.is_scalar()) {
    PartitionedValue same = value;
    same.sharding = target;
    return same;
  }
  auto key = std::make_pair(value.id, target.to_string());
  auto cached = context.reshard_cache().find(key);
  if (cached != context.reshard_cache().end()) return cached->second;
  if (value.base_shape.is_tuple()) {
    PartitionedValue tuple = reshard_tuple(context, value, target);
    context.reshard_cache()[key] = tuple;
    return tuple;
  }

  const int64_t rank = value.base_shape.rank();
  std::vector<int64_t> only_in_source, only_in_target;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t s = tile_count(value.sharding, d), t = tile_count(target, d);
    if (s > 1 && t == 1) only_in_source.push_back(d);
    if (t > 1 && s == 1) only_in_target.push_back(d);
  }
  PartitionedValue result;
  if (partially_replicate_on_dims(value.sharding, only_in_source) == target) {
    result = all_gather_dims(context, value, only_in_source);
  } else if (partially_replicate_on_dims(target, only_in_target) == value.sharding) {
    result = slice_dims_locally(context, value, target, only_in_target);
  } else if (auto moved = all_to_all_dims(value.sharding, target)) {
    result = all_to_all_move(context, value, target, moved->first, moved->second);
  } else if (same_tile_shape(value.sharding, target)) {
    result = permute_devices(context, value, target);
  } else if (const auto& plan = context.relabeled_plans().plan(
                 value.sharding, target, value.base_shape.dims(), context.num_devices(),
                 dtype_bytes(value.base_shape.dtype()))) {
    result = apply_relabeled_digit_reshard(context, value, *plan, target);
  } else {
    ++context.stats().full_replications;
    PartitionedValue full = all_gather_dims(context, value, sharded_dims(value.sharding));
    assert(full.sharding.is_replicated());
    result = target.is_replicated()
                 ? full
                 : slice_dims_locally(context, full, target, sharded_dims(target));
  }
  result.sharding = target;
  if (result.id != value.id)
    context.builder().mutable_instr(result.id).global_sharding = target.to_string();
  context.reshard_cache()[key] = result;
  return result;
}

}  // namespace podsim::compiler
