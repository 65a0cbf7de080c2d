// Sharding: canonicalising factories, derived quantities, validation and
// per-device extents (docs/reference/gspmd.md#normalisation, #tile-extents-and-padding).
#include "compiler/sharding/sharding.h"

#include <algorithm>
#include <cassert>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace podsim::compiler {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool all_ones(std::span<const int64_t> dims) {
  return std::all_of(dims.begin(), dims.end(), [](int64_t d) { return d == 1; });
}

}  // namespace

std::string_view to_string(SubgroupType type) {
  return type == SubgroupType::kManual ? "manual" : "replicated";
}

Sharding Sharding::replicated() { return Sharding(); }

Sharding Sharding::manual() {
  Sharding s;
  s.kind_ = Kind::kManual;
  return s;
}

Sharding Sharding::unknown() {
  Sharding s;
  s.kind_ = Kind::kUnknown;
  return s;
}

Sharding Sharding::maximal(int64_t device) {
  Sharding s;
  s.kind_ = Kind::kMaximal;
  s.tiles_ = TileAssignment::from_devices({1}, {device});
  return s;
}

Sharding Sharding::tiled(TileAssignment tiles) {
  if (tiles.num_elements() == 1) return replicated();
  Sharding s;
  s.kind_ = Kind::kTiled;
  s.tiles_ = std::move(tiles);
  return s;
}

Sharding Sharding::partial_tile(TileAssignment tiles) {
  return subgroup(std::move(tiles), {SubgroupType::kReplicated});
}

Sharding Sharding::subgroup(TileAssignment tiles, std::vector<SubgroupType> types) {
  assert(static_cast<int64_t>(types.size()) <= tiles.rank());
  const int64_t data_rank = tiles.rank() - static_cast<int64_t>(types.size());
  // 1. Drop subgroup dims of size 1.
  {
    std::vector<int64_t> dims(tiles.dims().begin(), tiles.dims().begin() + data_rank);
    std::vector<SubgroupType> kept;
    for (size_t k = 0; k < types.size(); ++k) {
      const int64_t size = tiles.dim(data_rank + static_cast<int64_t>(k));
      if (size == 1) continue;
      dims.push_back(size);
      kept.push_back(types[k]);
    }
    tiles = tiles.reshape(std::move(dims));
    types = std::move(kept);
  }
  if (types.empty()) return tiled(std::move(tiles));
  const std::span<const int64_t> data_dims(tiles.dims().data(), static_cast<size_t>(data_rank));
  // 2. Nothing tiled and one kind of subgroup: the whole value is manual/replicated.
  const bool one_type =
      std::all_of(types.begin(), types.end(), [&](SubgroupType t) { return t == types[0]; });
  if (all_ones(data_dims) && one_type) {
    return types[0] == SubgroupType::kManual ? manual() : replicated();
  }
  // 3. Merge dims of one type (manual dims, then replicated dims) by moving
  //    them adjacent, in canonical type order.
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < data_rank; ++d) perm.push_back(d);
  std::vector<int64_t> merged_dims(data_dims.begin(), data_dims.end());
  std::vector<SubgroupType> merged_types;
  for (SubgroupType type : {SubgroupType::kManual, SubgroupType::kReplicated}) {
    int64_t size = 1;
    for (size_t k = 0; k < types.size(); ++k) {
      if (types[k] != type) continue;
      perm.push_back(data_rank + static_cast<int64_t>(k));
      size *= tiles.dim(data_rank + static_cast<int64_t>(k));
    }
    if (size > 1) {
      merged_dims.push_back(size);
      merged_types.push_back(type);
    }
  }
  tiles = tiles.transpose(perm).reshape(merged_dims);
  // 4. Replicated is last when present: sort its groups.
  if (merged_types.back() == SubgroupType::kReplicated) tiles = tiles.sort_last_dim();
  Sharding s;
  s.kind_ = Kind::kTiled;
  s.tiles_ = std::move(tiles);
  s.subgroup_types_ = std::move(merged_types);
  return s;
}

Sharding Sharding::tuple(std::vector<Sharding> leaves) {
  Sharding s;
  s.kind_ = Kind::kTuple;
  for (auto& leaf : leaves) {
    if (leaf.is_tuple()) {
      for (const auto& inner : leaf.tuple_elements_) s.tuple_elements_.push_back(inner);
    } else {
      s.tuple_elements_.push_back(std::move(leaf));
    }
  }
  return s;
}

Sharding Sharding::with_group(std::optional<ShardGroup> group) const {
  Sharding s = *this;
  s.group_ = group;
  return s;
}

Sharding Sharding::with_metadata(std::vector<std::string> metadata) const {
  Sharding s = *this;
  s.metadata_ = std::move(metadata);
  return s;
}

Sharding Sharding::without_group_and_metadata() const {
  Sharding s = *this;
  s.group_.reset();
  s.metadata_.clear();
  for (auto& leaf : s.tuple_elements_) leaf = leaf.without_group_and_metadata();
  return s;
}

bool Sharding::replicate_on_last_tile_dim() const {
  return is_tiled() && subgroup_types_.size() == 1 &&
         subgroup_types_[0] == SubgroupType::kReplicated;
}

int64_t Sharding::tiled_data_rank() const {
  assert(is_tiled());
  return tiles_.rank() - static_cast<int64_t>(subgroup_types_.size());
}

std::vector<int64_t> Sharding::data_tile_dims() const {
  if (!is_tiled()) return {};
  return {tiles_.dims().begin(), tiles_.dims().begin() + tiled_data_rank()};
}

int64_t Sharding::num_tiles() const { return is_tiled() ? product_of(data_tile_dims()) : 1; }

int64_t Sharding::total_num_tiles() const { return is_tiled() ? tiles_.num_elements() : 1; }

int64_t Sharding::subgroup_replication_dim() const {
  if (!is_tiled()) return -1;
  for (size_t k = 0; k < subgroup_types_.size(); ++k) {
    if (subgroup_types_[k] == SubgroupType::kReplicated) {
      return tiled_data_rank() + static_cast<int64_t>(k);
    }
  }
  return -1;
}

int64_t Sharding::subgroup_manual_dim() const {
  if (!is_tiled()) return -1;
  for (size_t k = 0; k < subgroup_types_.size(); ++k) {
    if (subgroup_types_[k] == SubgroupType::kManual) {
      return tiled_data_rank() + static_cast<int64_t>(k);
    }
  }
  return -1;
}

std::optional<std::vector<int64_t>> Sharding::tile_index_for_device(int64_t device) const {
  assert(is_tiled());
  if (const auto& factors = tiles_.iota_factors()) {
    // Iota array (hot path of the partitioner, called per device): the flat
    // position from the device's digits (see TileAssignment::index_of), then
    // only the data dims of its unravelled index; one allocation.
    if (device < 0 || device >= tiles_.num_elements()) return std::nullopt;
    int64_t flat = 0;
    for (const auto& f : *factors) flat = flat * f.size + (device / f.stride) % f.size;
    const int64_t data_rank = tiled_data_rank();
    std::vector<int64_t> index(static_cast<size_t>(data_rank));
    for (int64_t d = tiles_.rank(); d-- > 0;) {
      if (d < data_rank) index[static_cast<size_t>(d)] = flat % tiles_.dim(d);
      flat /= tiles_.dim(d);
    }
    return index;
  }
  auto index = tiles_.index_of(device);
  if (!index) return std::nullopt;
  index->resize(static_cast<size_t>(tiled_data_rank()));
  return index;
}

std::vector<int64_t> Sharding::devices_for_tile(std::span<const int64_t> tile_index) const {
  assert(is_tiled() && static_cast<int64_t>(tile_index.size()) == tiled_data_rank());
  const std::vector<int64_t> trailing(tiles_.dims().begin() + tiled_data_rank(),
                                      tiles_.dims().end());
  const int64_t cells = product_of(trailing);
  std::vector<int64_t> index(tile_index.begin(), tile_index.end());
  index.resize(static_cast<size_t>(tiles_.rank()), 0);
  std::vector<int64_t> devices;
  for (int64_t c = 0; c < cells; ++c) {
    int64_t rest = c;
    for (size_t k = trailing.size(); k-- > 0;) {
      index[tile_index.size() + k] = rest % trailing[k];
      rest /= trailing[k];
    }
    devices.push_back(tiles_.at(index));
  }
  return devices;
}

std::vector<std::vector<int64_t>> Sharding::replication_groups() const {
  assert(is_tiled());
  const int64_t rep_dim = subgroup_replication_dim();
  const int64_t group_size = rep_dim >= 0 ? tiles_.dim(rep_dim) : 1;
  // Replicated is the last tile dim, so each group is one row of it.
  std::vector<std::vector<int64_t>> groups;
  const auto values = tiles_.to_vector();
  for (size_t start = 0; start < values.size(); start += static_cast<size_t>(group_size)) {
    std::vector<int64_t> group(values.begin() + static_cast<std::ptrdiff_t>(start),
                               values.begin() + static_cast<std::ptrdiff_t>(start) + group_size);
    std::sort(group.begin(), group.end());
    groups.push_back(std::move(group));
  }
  return groups;
}

std::optional<int64_t> Sharding::unique_device() const {
  if (!is_maximal()) return std::nullopt;
  return tiles_.at_flat(0);
}

void Sharding::validate(int64_t rank, int64_t num_devices, const SourceLocation& where) const {
  switch (kind_) {
    case Kind::kTuple:
      throw UserError(where, fmt::format("tuple sharding {} given for an array value", to_string()),
                      "use a leaf sharding such as {replicated} for a non-tuple value");
    case Kind::kReplicated:
    case Kind::kManual:
    case Kind::kUnknown:
      return;
    case Kind::kMaximal: {
      const int64_t device = *unique_device();
      if (device < 0 || device >= num_devices) {
        throw UserError(where, fmt::format("{}: device {} is out of range", to_string(), device),
                        fmt::format("device ids must be in [0, {})", num_devices));
      }
      return;
    }
    case Kind::kTiled:
      break;
  }
  if (tiled_data_rank() != rank) {
    throw UserError(where,
                    fmt::format("{} tiles {} dims but the value has rank {}", to_string(),
                                tiled_data_rank(), rank),
                    "give one tile count per tensor dim (plus trailing subgroup dims)");
  }
  if (tiles_.num_elements() != num_devices) {
    throw UserError(where,
                    fmt::format("{} uses {} devices but there are {}", to_string(),
                                tiles_.num_elements(), num_devices),
                    "the product of the tile dims must equal the device count");
  }
  // An iota array of num_devices elements is a permutation of [0, num_devices).
  if (tiles_.is_iota()) return;
  std::vector<bool> seen(static_cast<size_t>(num_devices), false);
  for (int64_t device : tiles_.to_vector()) {
    if (device < 0 || device >= num_devices) {
      throw UserError(where, fmt::format("{}: device {} is out of range", to_string(), device),
                      fmt::format("device ids must be in [0, {})", num_devices));
    }
    if (seen[static_cast<size_t>(device)]) {
      throw UserError(where, fmt::format("{}: device {} appears twice", to_string(), device),
                      "each device must hold exactly one tile");
    }
    seen[static_cast<size_t>(device)] = true;
  }
}

void Sharding::validate_leaves(std::span<const int64_t> leaf_ranks, int64_t num_devices,
                               const SourceLocation& where) const {
  if (!is_tuple()) {
    if (leaf_ranks.size() != 1) {
      throw UserError(where,
                      fmt::format("leaf sharding {} given for a tuple of {} leaves", to_string(),
                                  leaf_ranks.size()),
                      "write one sharding per leaf: {s0, s1, ...}");
    }
    validate(leaf_ranks[0], num_devices, where);
    return;
  }
  if (tuple_elements_.size() != leaf_ranks.size()) {
    throw UserError(where,
                    fmt::format("tuple sharding has {} leaves but the value has {}",
                                tuple_elements_.size(), leaf_ranks.size()),
                    "list one sharding per tuple leaf, in pre-order");
  }
  for (size_t i = 0; i < leaf_ranks.size(); ++i) {
    tuple_elements_[i].validate(leaf_ranks[i], num_devices, where);
  }
}

bool Sharding::operator==(const Sharding& other) const {
  return kind_ == other.kind_ && tiles_ == other.tiles_ &&
         subgroup_types_ == other.subgroup_types_ && tuple_elements_ == other.tuple_elements_ &&
         group_ == other.group_;
}

bool ShardRegion::empty() const {
  for (size_t i = 0; i < offsets.size(); ++i) {
    if (offsets[i] >= limits[i]) return true;
  }
  return false;
}

std::vector<int64_t> shard_shape(const Sharding& sharding, std::span<const int64_t> dims) {
  std::vector<int64_t> shape(dims.begin(), dims.end());
  if (!sharding.is_tiled()) return shape;
  assert(sharding.tiled_data_rank() == static_cast<int64_t>(dims.size()));
  for (size_t i = 0; i < dims.size(); ++i) {
    shape[i] = ceil_div(dims[i], sharding.tile_assignment().dim(static_cast<int64_t>(i)));
  }
  return shape;
}

ShardRegion shard_region(const Sharding& sharding, std::span<const int64_t> dims, int64_t device) {
  ShardRegion region{std::vector<int64_t>(dims.size(), 0),
                     std::vector<int64_t>(dims.begin(), dims.end())};
  if (!sharding.is_tiled()) return region;
  const auto index = sharding.tile_index_for_device(device);
  assert(index.has_value());
  const auto shape = shard_shape(sharding, dims);
  for (size_t i = 0; i < dims.size(); ++i) {
    region.offsets[i] = std::min((*index)[i] * shape[i], dims[i]);
    region.limits[i] = std::min(((*index)[i] + 1) * shape[i], dims[i]);
  }
  return region;
}

bool evenly_partitions(const Sharding& sharding, std::span<const int64_t> dims) {
  if (sharding.is_tile_maximal()) return sharding.is_replicated();
  if (!sharding.is_tiled()) return true;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] % sharding.tile_assignment().dim(static_cast<int64_t>(i)) != 0) return false;
  }
  return true;
}

}  // namespace podsim::compiler
