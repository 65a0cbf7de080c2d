// SpmdContext: partition offsets, device groups and padding masks
// (gspmd-algorithms.md 3.1 MakePartitionOffsets, per-group collectives).
#include "compiler/spmd/spmd_context.h"

#include <cassert>
#include <algorithm>
#include <numeric>

#include <fmt/format.h>

namespace podsim::compiler {

int64_t tile_count(const Sharding& sharding, int64_t dim) {
  if (!sharding.is_tiled()) return 1;
  return sharding.tile_assignment().dim(dim);
}

std::vector<int64_t> sharded_dims(const Sharding& sharding) {
  std::vector<int64_t> dims;
  if (!sharding.is_tiled()) return dims;
  for (int64_t d = 0; d < sharding.tiled_data_rank(); ++d)
    if (tile_count(sharding, d) > 1) dims.push_back(d);
  return dims;
}

SpmdContext::SpmdContext(Module* module, int64_t num_devices)
    : module_(module), num_devices_(num_devices), builder_("spmd_entry", module) {}

InstrId SpmdContext::zero(DType dtype) {
  auto it = zero_cache_.find(dtype);
  if (it != zero_cache_.end()) return it->second;
  InstrId z = builder_.scalar_constant(dtype, 0);
  zero_cache_[dtype] = z;
  return z;
}

CompId SpmdContext::scalar_reducer(Opcode op, DType dtype) {
  auto key = std::make_pair(op, dtype);
  auto it = reducer_cache_.find(key);
  if (it != reducer_cache_.end()) return it->second;
  std::string name = fmt::format("spmd_{}_{}", opcode_name(op), dtype_name(dtype));
  CompId id = module_->add_computation(scalar_binary_computation(name, op, dtype));
  reducer_cache_[key] = id;
  return id;
}

// Offset table: entry d = tile_index(d)[dim] * ceil(D / n); read with
// dynamic-slice at partition-id and reshaped to a scalar (MakePartitionOffsets).
InstrId SpmdContext::partition_offset(const Sharding& sharding, std::span<const int64_t> base_dims,
                                      int64_t dim) {
  const int64_t n = tile_count(sharding, dim);
  if (n == 1) return zero(DType::kS32);
  auto key = std::make_tuple(sharding.to_string(), std::vector<int64_t>(base_dims.begin(), base_dims.end()), dim);
  auto it = offset_cache_.find(key);
  if (it != offset_cache_.end()) return it->second;
  const int64_t extent = (base_dims[static_cast<size_t>(dim)] + n - 1) / n;
  // One pass over the tile array: the device at flat position p has tile
  // coordinate (p / stride) % n along `dim` (stride = product of the minor
  // tile dims). The first occurrence wins, as tile_index_for_device.
  const TileAssignment& tiles = sharding.tile_assignment();
  int64_t stride = 1;
  for (int64_t d = tiles.rank() - 1; d > dim; --d) stride *= tiles.dim(d);
  const std::vector<int64_t> devices = tiles.to_vector();
  std::vector<double> table(static_cast<size_t>(num_devices_), 0.0);
  std::vector<bool> seen(static_cast<size_t>(num_devices_), false);
  for (size_t p = 0; p < devices.size(); ++p) {
    const int64_t device = devices[p];
    if (device < 0 || device >= num_devices_ || seen[static_cast<size_t>(device)]) continue;
    seen[static_cast<size_t>(device)] = true;
    const int64_t coordinate = (static_cast<int64_t>(p) / stride) % n;
    table[static_cast<size_t>(device)] = static_cast<double>(coordinate * extent);
  }
  assert(std::all_of(seen.begin(), seen.end(), [](bool b) { return b; }));
  if (partition_id_ == kNoId) partition_id_ = builder_.partition_id();
  InstrId t = builder_.constant(Literal(Shape(DType::kS32, {num_devices_}), std::move(table)));
  InstrId one = builder_.dynamic_slice(t, {partition_id_}, {1});
  InstrId offset = builder_.reshape(one, {});
  offset_cache_[key] = offset;
  return offset;
}

// Move the group tile dims last, flatten: rows are the groups. The reshaped
// tile array keeps an iota form when the sharding's has one.
ReplicaGroups SpmdContext::groups_along_tile_dims(const Sharding& sharding,
                                                  std::span<const int64_t> tile_dims) const {
  const TileAssignment& ta = sharding.tile_assignment();
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < ta.rank(); ++d)
    if (std::find(tile_dims.begin(), tile_dims.end(), d) == tile_dims.end()) perm.push_back(d);
  int64_t group_size = 1;
  for (int64_t d : tile_dims) {
    perm.push_back(d);
    group_size *= ta.dim(d);
  }
  const int64_t total = ta.num_elements();
  TileAssignment rows = ta.transpose(perm).reshape({total / group_size, group_size});
  ReplicaGroups groups;
  if (auto form = rows.iota_form()) {
    groups.iota = IotaGroups{total / group_size, group_size, form->reshape_dims, form->transpose_perm};
    return groups;
  }
  std::vector<int64_t> flat = rows.to_vector();
  for (int64_t g = 0; g < total / group_size; ++g)
    groups.explicit_groups.emplace_back(flat.begin() + g * group_size, flat.begin() + (g + 1) * group_size);
  return groups;
}

// valid(i) = iota_dim(i) + offset < D; value = select(valid, value, fill).
InstrId SpmdContext::mask_padding(const PartitionedValue& value, std::span<const int64_t> dims, InstrId fill) {
  const auto& base = value.base_shape.dims();
  const Shape local = local_shape(value.id);  // a copy: emitting grows the vector
  InstrId result = value.id;
  for (int64_t dim : dims) {
    const int64_t n = tile_count(value.sharding, dim);
    if (n == 1 || base[static_cast<size_t>(dim)] % n == 0) continue;
    Shape index_shape(DType::kS32, local.dims());
    InstrId iota = builder_.iota(index_shape, dim);
    InstrId offset = builder_.broadcast(partition_offset(value.sharding, base, dim), local.dims(), {});
    InstrId position = builder_.binary(Opcode::kAdd, iota, offset);
    InstrId limit = builder_.broadcast(builder_.scalar_constant(DType::kS32, static_cast<double>(base[static_cast<size_t>(dim)])),
                                       local.dims(), {});
    InstrId valid = builder_.compare(position, limit, ComparisonDirection::kLt);
    InstrId filler = builder_.broadcast(fill, local.dims(), {});
    result = builder_.select(valid, result, filler);
  }
  return result;
}

}  // namespace podsim::compiler
