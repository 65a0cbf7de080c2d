// Sharding algebra: dimension moves (transpose, reverse, partial
// replication, add/remove dims, correspondences, tile moves). Each is a
// reshape/transpose of the tile array followed by a canonical factory.
#include "compiler/sharding/sharding_util.h"

#include <algorithm>
#include <cassert>

namespace podsim::compiler {
namespace {

bool contains(std::span<const int64_t> values, int64_t v) {
  return std::find(values.begin(), values.end(), v) != values.end();
}

}  // namespace

Sharding transpose_sharding(const Sharding& sharding, std::span<const int64_t> perm) {
  if (!sharding.is_tiled()) return sharding;
  assert(static_cast<int64_t>(perm.size()) == sharding.tiled_data_rank());
  std::vector<int64_t> full(perm.begin(), perm.end());
  for (int64_t d = sharding.tiled_data_rank(); d < sharding.tile_assignment().rank(); ++d) {
    full.push_back(d);
  }
  return Sharding::subgroup(sharding.tile_assignment().transpose(full), sharding.subgroup_types());
}

Sharding reverse_sharding(const Sharding& sharding, std::span<const int64_t> dims) {
  if (!sharding.is_tiled() || dims.empty()) return sharding;
  const auto& tiles = sharding.tile_assignment();
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(tiles.num_elements()));
  std::vector<int64_t> index(static_cast<size_t>(tiles.rank()), 0);
  for (int64_t p = 0; p < tiles.num_elements(); ++p) {
    int64_t rest = p;
    for (int64_t d = tiles.rank(); d-- > 0;) {
      const int64_t i = rest % tiles.dim(d);
      rest /= tiles.dim(d);
      index[static_cast<size_t>(d)] = contains(dims, d) ? tiles.dim(d) - 1 - i : i;
    }
    out.push_back(tiles.at(index));
  }
  return Sharding::subgroup(TileAssignment::from_devices(tiles.dims(), std::move(out)),
                            sharding.subgroup_types());
}

Sharding partially_replicate_on_dims(const Sharding& sharding, std::span<const int64_t> dims) {
  if (!sharding.is_tiled()) return sharding;
  const int64_t rank = sharding.tiled_data_rank();
  const auto& tiles = sharding.tile_assignment();
  std::vector<int64_t> moved;
  for (int64_t d = 0; d < rank; ++d) {
    if (contains(dims, d) && tiles.dim(d) > 1) moved.push_back(d);
  }
  if (moved.empty()) return sharding;
  // Order [kept data dims, subgroup dims, moved dims]; the moved dims become
  // new trailing replicated dims, a size-1 placeholder stays in their place.
  std::vector<int64_t> perm;
  std::vector<int64_t> new_dims;
  for (int64_t d = 0; d < rank; ++d) {
    if (!contains(moved, d)) perm.push_back(d);
    new_dims.push_back(contains(moved, d) ? 1 : tiles.dim(d));
  }
  for (int64_t d = rank; d < tiles.rank(); ++d) {
    perm.push_back(d);
    new_dims.push_back(tiles.dim(d));
  }
  auto types = sharding.subgroup_types();
  for (int64_t d : moved) {
    perm.push_back(d);
    new_dims.push_back(tiles.dim(d));
    types.push_back(SubgroupType::kReplicated);
  }
  return Sharding::subgroup(tiles.transpose(perm).reshape(new_dims), types);
}

Sharding partially_replicate_on_all_dims_except(const Sharding& sharding,
                                                std::span<const int64_t> keep) {
  if (!sharding.is_tiled()) return sharding;
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < sharding.tiled_data_rank(); ++d) {
    if (!contains(keep, d)) dims.push_back(d);
  }
  return partially_replicate_on_dims(sharding, dims);
}

Sharding replicate_all_data_dims(const Sharding& sharding) {
  if (!sharding.is_tiled()) return sharding.is_manual() ? sharding : Sharding::replicated();
  if (!sharding.has_manual_subgroup()) return Sharding::replicated();
  return partially_replicate_on_all_dims_except(sharding, {});
}

Sharding remove_shape_dims(const Sharding& sharding, std::span<const int64_t> dims) {
  if (!sharding.is_tiled()) return sharding;
  std::vector<int64_t> new_dims;
  const auto& tiles = sharding.tile_assignment();
  for (int64_t d = 0; d < tiles.rank(); ++d) {
    if (d < sharding.tiled_data_rank() && contains(dims, d)) {
      assert(tiles.dim(d) == 1 && "remove_shape_dims: dim is sharded");
      continue;
    }
    new_dims.push_back(tiles.dim(d));
  }
  return Sharding::subgroup(tiles.reshape(new_dims), sharding.subgroup_types());
}

Sharding add_shape_dims(const Sharding& sharding, std::span<const int64_t> positions) {
  if (!sharding.is_tiled() || positions.empty()) return sharding;
  const int64_t out_rank = sharding.tiled_data_rank() + static_cast<int64_t>(positions.size());
  const auto& tiles = sharding.tile_assignment();
  std::vector<int64_t> new_dims;
  int64_t src = 0;
  for (int64_t d = 0; d < out_rank; ++d) {
    new_dims.push_back(contains(positions, d) ? 1 : tiles.dim(src++));
  }
  for (int64_t d = src; d < tiles.rank(); ++d) new_dims.push_back(tiles.dim(d));
  return Sharding::subgroup(tiles.reshape(new_dims), sharding.subgroup_types());
}

std::optional<Sharding> transpose_with_collapsed_dims(const Sharding& sharding,
                                                      std::span<const int64_t> src_to_tgt,
                                                      std::span<const int64_t> tgt_to_src) {
  if (!sharding.is_tiled()) return sharding;
  const auto& tiles = sharding.tile_assignment();
  const int64_t rank = sharding.tiled_data_rank();
  assert(static_cast<int64_t>(src_to_tgt.size()) == rank);
  // Mapped source dims in target order, then the vanishing (unsharded) ones.
  std::vector<int64_t> perm;
  std::vector<int64_t> new_dims;
  for (size_t j = 0; j < tgt_to_src.size(); ++j) {
    const int64_t src = tgt_to_src[j];
    if (src >= 0) {
      assert(src_to_tgt[static_cast<size_t>(src)] == static_cast<int64_t>(j));
      perm.push_back(src);
      new_dims.push_back(tiles.dim(src));
    } else {
      new_dims.push_back(1);
    }
  }
  for (int64_t d = 0; d < rank; ++d) {
    if (src_to_tgt[static_cast<size_t>(d)] >= 0) continue;
    if (tiles.dim(d) != 1) return std::nullopt;
    perm.push_back(d);
  }
  for (int64_t d = rank; d < tiles.rank(); ++d) {
    perm.push_back(d);
    new_dims.push_back(tiles.dim(d));
  }
  return Sharding::subgroup(tiles.transpose(perm).reshape(new_dims), sharding.subgroup_types());
}

Sharding propagate_along_dims_and_replicate_others(const Sharding& sharding,
                                                   const DimCorrespondence& dims) {
  if (!sharding.is_tiled()) return sharding;
  assert(dims.source_dims.size() == dims.target_dims.size());
  const Sharding kept = partially_replicate_on_all_dims_except(sharding, dims.source_dims);
  if (!kept.is_tiled()) return kept;
  std::vector<int64_t> src_to_tgt(static_cast<size_t>(kept.tiled_data_rank()), -1);
  std::vector<int64_t> tgt_to_src(static_cast<size_t>(dims.target_rank), -1);
  for (size_t i = 0; i < dims.source_dims.size(); ++i) {
    src_to_tgt[static_cast<size_t>(dims.source_dims[i])] = dims.target_dims[i];
    tgt_to_src[static_cast<size_t>(dims.target_dims[i])] = dims.source_dims[i];
  }
  auto result = transpose_with_collapsed_dims(kept, src_to_tgt, tgt_to_src);
  assert(result.has_value());  // every unmapped source dim was replicated
  return *result;
}

Sharding move_and_merge_tiles(const Sharding& sharding, int64_t source_dim, int64_t target_dim) {
  if (!sharding.is_tiled() || source_dim == target_dim) return sharding;
  const auto& tiles = sharding.tile_assignment();
  const int64_t rank = sharding.tiled_data_rank();
  std::vector<int64_t> perm;
  std::vector<int64_t> new_dims;
  for (int64_t d = 0; d < rank; ++d) {
    if (d != source_dim) perm.push_back(d);
    if (d == target_dim) perm.push_back(source_dim);
    new_dims.push_back(d == source_dim   ? 1
                       : d == target_dim ? tiles.dim(d) * tiles.dim(source_dim)
                                         : tiles.dim(d));
  }
  for (int64_t d = rank; d < tiles.rank(); ++d) {
    perm.push_back(d);
    new_dims.push_back(tiles.dim(d));
  }
  return Sharding::subgroup(tiles.transpose(perm).reshape(new_dims), sharding.subgroup_types());
}

std::optional<int64_t> first_target_dim_to_move_tiles(std::span<const int64_t> dims,
                                                      const Sharding& sharding,
                                                      int64_t source_dim) {
  if (!sharding.is_tiled()) return std::nullopt;
  const auto& tiles = sharding.tile_assignment();
  for (int64_t d = 0; d < static_cast<int64_t>(dims.size()); ++d) {
    if (d == source_dim) continue;
    if (dims[static_cast<size_t>(d)] % (tiles.dim(d) * tiles.dim(source_dim)) == 0) return d;
  }
  return std::nullopt;
}

namespace {

// The devices of `s` rearranged to a tile array of `new_dims`: new tile
// index -> old tile index by `old_of`.
template <typename OldOf>
std::vector<int64_t> rearranged_devices(const Sharding& s, const std::vector<int64_t>& new_dims,
                                        OldOf old_of) {
  const std::vector<int64_t> ids = s.tile_assignment().to_vector();
  const auto& old_dims = s.tile_assignment().dims();
  std::vector<int64_t> out, index(new_dims.size(), 0);
  for (size_t n = 0; n < ids.size(); ++n) {
    const std::vector<int64_t> old = old_of(index);
    int64_t flat = 0;
    for (size_t i = 0; i < old_dims.size(); ++i) flat = flat * old_dims[i] + old[i];
    out.push_back(ids[static_cast<size_t>(flat)]);
    for (size_t i = new_dims.size(); i-- > 0;) {
      if (++index[i] < new_dims[i]) break;
      index[i] = 0;
    }
  }
  return out;
}

}  // namespace

std::optional<Sharding> data_dim_to_manual(const Sharding& s, int64_t d) {
  if (!s.is_tiled() || s.has_manual_subgroup() || d < 0 || d >= s.tiled_data_rank() ||
      !(s.subgroup_types().empty() || s.replicate_on_last_tile_dim()))
    return std::nullopt;
  const int64_t rank = s.tiled_data_rank();
  const auto& old_dims = s.tile_assignment().dims();
  const int64_t k = old_dims[static_cast<size_t>(d)];
  if (k == 1) return std::nullopt;
  const bool rep = !s.subgroup_types().empty();
  std::vector<int64_t> dims(old_dims.begin(), old_dims.begin() + rank);
  dims[static_cast<size_t>(d)] = 1;
  if (rep) dims.push_back(old_dims[static_cast<size_t>(rank)]);
  dims.push_back(k);
  auto ids = rearranged_devices(s, dims, [&](const std::vector<int64_t>& x) {
    std::vector<int64_t> old(x.begin(), x.begin() + rank);
    old[static_cast<size_t>(d)] = x.back();
    if (rep) old.push_back(x[static_cast<size_t>(rank)]);
    return old;
  });
  std::vector<SubgroupType> types;
  if (rep) types.push_back(SubgroupType::kReplicated);
  types.push_back(SubgroupType::kManual);
  return Sharding::subgroup(TileAssignment::from_devices(dims, std::move(ids)), types);
}

std::optional<Sharding> manual_to_data_dim(const Sharding& s, int64_t d) {
  if (!s.is_tiled() || !s.has_manual_subgroup() || d < 0 || d >= s.tiled_data_rank())
    return std::nullopt;
  const int64_t rank = s.tiled_data_rank();
  const auto& old_dims = s.tile_assignment().dims();
  const int64_t manual = s.subgroup_manual_dim(), rep = s.subgroup_replication_dim();
  // d may be tiled t ways inside each manual shard: manual index major.
  const int64_t t = old_dims[static_cast<size_t>(d)];
  std::vector<int64_t> dims(old_dims.begin(), old_dims.begin() + rank);
  dims[static_cast<size_t>(d)] = old_dims[static_cast<size_t>(manual)] * t;
  if (rep >= 0) dims.push_back(old_dims[static_cast<size_t>(rep)]);
  auto ids = rearranged_devices(s, dims, [&](const std::vector<int64_t>& x) {
    std::vector<int64_t> old(old_dims.size(), 0);
    std::copy(x.begin(), x.begin() + rank, old.begin());
    old[static_cast<size_t>(d)] = x[static_cast<size_t>(d)] % t;
    old[static_cast<size_t>(manual)] = x[static_cast<size_t>(d)] / t;
    if (rep >= 0) old[static_cast<size_t>(rep)] = x[static_cast<size_t>(rank)];
    return old;
  });
  TileAssignment tiles = TileAssignment::from_devices(dims, std::move(ids));
  return rep >= 0 ? Sharding::partial_tile(std::move(tiles)) : Sharding::tiled(std::move(tiles));
}

}  // namespace podsim::compiler
