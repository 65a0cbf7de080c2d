// SpmdContext: partition offsets, device groups and padding masks
// (docs/reference/gspmd.md#partitioner-structure MakePartitionOffsets, per-group collectives).
// Offsets are tile coordinate * padded extent; the coordinate of an iota
// tile array is computed from partition-id digits (tile_coordinates.h).
#include "compiler/spmd/spmd_context.h"

#include <algorithm>
#include <cassert>
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
    : module_(module),
      num_devices_(num_devices),
      builder_("spmd_entry", module),
      reducers_(module, "spmd", ScalarReducerCache::Existing::kAdd) {}

InstrId SpmdContext::zero(DType dtype) {
  auto it = zero_cache_.find(dtype);
  if (it != zero_cache_.end()) return it->second;
  InstrId z = builder_.scalar_constant(dtype, 0);
  zero_cache_[dtype] = z;
  return z;
}

CompId SpmdContext::scalar_reducer(Opcode op, DType dtype) { return reducers_.get(op, dtype); }

std::vector<Sharding> SpmdContext::reshards_built(InstrId id) const {
  std::vector<Sharding> built;
  for (auto it = reshard_cache_.lower_bound({id, std::string()});
       it != reshard_cache_.end() && it->first.first == id; ++it)
    built.push_back(it->second.sharding);
  return built;
}

// offset = tile coordinate * ceil(D / n) (MakePartitionOffsets).
InstrId SpmdContext::partition_offset(const Sharding& sharding, std::span<const int64_t> base_dims,
                                      int64_t dim) {
  const int64_t n = tile_count(sharding, dim);
  if (n == 1) return zero(DType::kS32);
  const int64_t extent = (base_dims[static_cast<size_t>(dim)] + n - 1) / n;
  const InstrId coordinate = tile_coordinate(sharding, dim);
  const auto key = std::make_pair(coordinate, extent);
  auto it = offset_cache_.find(key);
  if (it != offset_cache_.end()) return it->second;
  const InstrId offset =
      extent == 1
          ? coordinate
          : builder_.binary(Opcode::kMultiply, coordinate,
                            builder_.scalar_constant(DType::kS32, static_cast<double>(extent)));
  offset_cache_[key] = offset;
  return offset;
}

InstrId SpmdContext::partition_id_s32() {
  if (partition_id_s32_ != kNoId) return partition_id_s32_;
  if (partition_id_ == kNoId) partition_id_ = builder_.partition_id();
  partition_id_s32_ = builder_.convert(partition_id_, DType::kS32);
  return partition_id_s32_;
}

// coordinate = sum_k ((pid / stride_k) % size_k) * weight_k, weight_k the
// product of the sizes of the pieces minor to k. The remainder is skipped
// when stride_k * size_k >= N (pid / stride_k < size_k already), the divide
// when stride_k == 1.
InstrId SpmdContext::emit_digit_coordinate(const DigitPieces& pieces) {
  if (pieces.empty()) return zero(DType::kS32);
  std::vector<std::pair<int64_t, int64_t>> key;
  for (const auto& f : pieces) key.emplace_back(f.size, f.stride);
  auto it = coordinate_cache_.find(key);
  if (it != coordinate_cache_.end()) return it->second;
  const InstrId pid = partition_id_s32();
  auto constant = [&](int64_t v) {
    return builder_.scalar_constant(DType::kS32, static_cast<double>(v));
  };
  InstrId value = kNoId;
  int64_t weight = 1;
  for (size_t k = pieces.size(); k-- > 0;) {
    const auto& f = pieces[k];
    InstrId term = pid;
    if (f.stride > 1) term = builder_.binary(Opcode::kDivide, term, constant(f.stride));
    if (f.stride * f.size < num_devices_)
      term = builder_.binary(Opcode::kRemainder, term, constant(f.size));
    if (weight > 1) term = builder_.binary(Opcode::kMultiply, term, constant(weight));
    value = value == kNoId ? term : builder_.binary(Opcode::kAdd, value, term);
    weight *= f.size;
  }
  coordinate_cache_[key] = value;
  return value;
}

InstrId SpmdContext::tile_coordinate(const Sharding& sharding, int64_t dim) {
  if (tile_count(sharding, dim) == 1) return zero(DType::kS32);
  if (auto pieces = tile_coordinate_pieces(sharding, dim + 1))
    return emit_digit_coordinate((*pieces)[static_cast<size_t>(dim)]);
  // Explicit tile array: a table of every device's coordinate, read at
  // partition-id. One pass over the array: the device at flat position p has
  // coordinate (p / stride) % n along `dim` (stride = product of the minor
  // tile dims); the first occurrence wins, as tile_index_for_device.
  auto key = std::make_pair(sharding.to_string(), dim);
  auto it = coordinate_table_cache_.find(key);
  if (it != coordinate_table_cache_.end()) return it->second;
  const int64_t n = tile_count(sharding, dim);
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
    table[static_cast<size_t>(device)] =
        static_cast<double>((static_cast<int64_t>(p) / stride) % n);
  }
  assert(std::all_of(seen.begin(), seen.end(), [](bool b) { return b; }));
  if (partition_id_ == kNoId) partition_id_ = builder_.partition_id();
  InstrId t = builder_.constant(Literal(Shape(DType::kS32, {num_devices_}), std::move(table)));
  InstrId coordinate = builder_.reshape(builder_.dynamic_slice(t, {partition_id_}, {1}), {});
  coordinate_table_cache_[key] = coordinate;
  return coordinate;
}

ReplicaGroups SpmdContext::groups_along_tile_dims(const Sharding& sharding,
                                                  std::span<const int64_t> tile_dims) const {
  return podsim::compiler::groups_along_tile_dims(sharding, tile_dims);
}

// Move the group tile dims last, flatten: rows are the groups. The reshaped
// tile array keeps an iota form when the sharding's has one.
ReplicaGroups groups_along_tile_dims(const Sharding& sharding, std::span<const int64_t> tile_dims) {
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
    groups.iota =
        IotaGroups{total / group_size, group_size, form->reshape_dims, form->transpose_perm};
    return groups;
  }
  std::vector<int64_t> flat = rows.to_vector();
  for (int64_t g = 0; g < total / group_size; ++g)
    groups.explicit_groups.emplace_back(flat.begin() + g * group_size,
                                        flat.begin() + (g + 1) * group_size);
  return groups;
}

std::optional<std::pair<DigitPieces, DigitPieces>> group_digit_pieces(const ReplicaGroups& groups,
                                                                      int64_t num_devices) {
  if (groups.is_all_devices())
    return std::make_pair(DigitPieces{}, canonical_pieces({{num_devices, 1}}));
  if (!groups.iota) return std::nullopt;
  const IotaGroups& g = *groups.iota;
  if (g.num_groups * g.group_size != num_devices) return std::nullopt;
  return iota_matrix_pieces(g.num_groups, g.group_size, g.reshape_dims, g.transpose_perm);
}

// valid(i) = iota_dim(i) + offset < D; value = select(valid, value, fill).
InstrId SpmdContext::mask_padding(const PartitionedValue& value, std::span<const int64_t> dims,
                                  InstrId fill) {
  const auto& base = value.base_shape.dims();
  const Shape local = local_shape(value.id);  // a copy: emitting grows the vector
  InstrId result = value.id;
  for (int64_t dim : dims) {
    const int64_t n = tile_count(value.sharding, dim);
    if (n == 1 || base[static_cast<size_t>(dim)] % n == 0) continue;
    Shape index_shape(DType::kS32, local.dims());
    InstrId iota = builder_.iota(index_shape, dim);
    InstrId offset =
        builder_.broadcast(partition_offset(value.sharding, base, dim), local.dims(), {});
    InstrId position = builder_.binary(Opcode::kAdd, iota, offset);
    InstrId limit = builder_.broadcast(
        builder_.scalar_constant(DType::kS32, static_cast<double>(base[static_cast<size_t>(dim)])),
        local.dims(), {});
    InstrId valid = builder_.compare(position, limit, ComparisonDirection::kLt);
    InstrId filler = builder_.broadcast(fill, local.dims(), {});
    result = builder_.select(valid, result, filler);
  }
  return result;
}

}  // namespace podsim::compiler
