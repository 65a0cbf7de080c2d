// Sharding through a reshape (docs/reference/gspmd.md#reshape-sharding, XLA's ReshapeSharding and
// PropagateShardingThroughReshape), in our own formulation: a cursor walks the source dims and
// one the target dims, major to minor, giving each target dim the source tiles whose extents
// align (equal, split, merge or gcd); tiles not given to a target dim become a replication dim.
// The walk's cases: docs/compiler.md#sharding-through-a-reshape
#include <algorithm>
#include <cassert>
#include <numeric>

#include "compiler/sharding/sharding_util.h"

namespace podsim::compiler {
namespace {

struct Piece {
  int64_t size;
  int64_t target;  // target dim, or -1 for replication
};

std::vector<int64_t> indices_of_size_one(std::span<const int64_t> dims) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 1) out.push_back(static_cast<int64_t>(i));
  }
  return out;
}

std::vector<int64_t> without_size_one(std::span<const int64_t> dims) {
  std::vector<int64_t> out;
  for (int64_t d : dims) {
    if (d != 1) out.push_back(d);
  }
  return out;
}

// Strict rule on shapes without size-1 dims; `sharding` is tiled.
std::optional<Sharding> reshape_without_unit_dims(const std::vector<int64_t>& src,
                                                  const std::vector<int64_t>& tgt,
                                                  const Sharding& sharding) {
  const auto tiles = sharding.data_tile_dims();
  std::vector<Piece> pieces;
  std::vector<int64_t> target_tiles(tgt.size(), 1);
  size_t i = 0, j = 0;
  int64_t s = src.empty() ? 1 : src[0];
  int64_t n = src.empty() ? 1 : tiles[0];
  int64_t t = tgt.empty() ? 1 : tgt[0];
  auto take = [&](int64_t k) {
    pieces.push_back({k, static_cast<int64_t>(j)});
    target_tiles[j] *= k;
    n /= k;
  };
  bool stopped = false;
  while (i < src.size()) {
    if (s == 1) {
      assert(n == 1);
      if (++i < src.size()) {
        s = src[i];
        n = tiles[i];
      }
      continue;
    }
    if (t == 1) {
      ++j;
      assert(j < tgt.size());
      t = tgt[j];
      continue;
    }
    if (s == t) {
      take(n);
      s = t = 1;
      continue;
    }
    if (s > t && s % t == 0) {
      if (n == 1 || t % n == 0) {
        take(n);
        s /= t;
        t = 1;
        continue;
      }
      if (n % t == 0 && s % n == 0) {
        take(t);
        s /= t;
        t = 1;
        continue;
      }
    } else if (s < t) {
      if (s % n != 0) return std::nullopt;  // uneven tiles cannot be merged
      assert(i + 1 < src.size());
      if (tiles[i + 1] > 1 && s != n) {  // non-contiguous merged tiles
        stopped = true;
        break;
      }
      ++i;
      s *= src[i];
      n *= tiles[i];
      continue;
    }
    // Interleaved sizes or an awkward split: gcd fallback, then stop.
    if (s % n != 0) return std::nullopt;
    const int64_t g = std::gcd(n, t);
    if (g > 1) take(g);
    stopped = true;
    break;
  }
  if (stopped) {
    pieces.push_back({n, -1});
    for (size_t k = i + 1; k < src.size(); ++k) pieces.push_back({tiles[k], -1});
  }
  if (product_of(target_tiles) == 1) return std::nullopt;

  // Reshape the tile array to the pieces, move the replicated ones last.
  const auto& full = sharding.tile_assignment();
  const int64_t data_rank = sharding.tiled_data_rank();
  std::vector<int64_t> piece_dims;
  for (const auto& p : pieces) piece_dims.push_back(p.size);
  const auto piece_count = static_cast<int64_t>(pieces.size());
  for (int64_t d = data_rank; d < full.rank(); ++d) piece_dims.push_back(full.dim(d));
  std::vector<int64_t> perm;
  for (int64_t k = 0; k < piece_count; ++k) {
    if (pieces[static_cast<size_t>(k)].target >= 0) perm.push_back(k);
  }
  for (int64_t d = data_rank; d < full.rank(); ++d) perm.push_back(piece_count + (d - data_rank));
  int64_t replicated = 1;
  for (int64_t k = 0; k < piece_count; ++k) {
    if (pieces[static_cast<size_t>(k)].target < 0) {
      perm.push_back(k);
      replicated *= pieces[static_cast<size_t>(k)].size;
    }
  }
  std::vector<int64_t> result_dims = target_tiles;
  for (int64_t d = data_rank; d < full.rank(); ++d) result_dims.push_back(full.dim(d));
  result_dims.push_back(replicated);
  auto types = sharding.subgroup_types();
  types.push_back(SubgroupType::kReplicated);
  return Sharding::subgroup(full.reshape(piece_dims).transpose(perm).reshape(result_dims), types);
}

// Tiled sharding with every data dim unsharded, over `rank` dims.
Sharding all_data_dims_replicated(const Sharding& sharding, int64_t rank) {
  const Sharding replicated = replicate_all_data_dims(sharding);
  if (!replicated.is_tiled()) return replicated;
  const auto& tiles = replicated.tile_assignment();
  std::vector<int64_t> dims(static_cast<size_t>(rank), 1);
  for (int64_t d = replicated.tiled_data_rank(); d < tiles.rank(); ++d) {
    dims.push_back(tiles.dim(d));
  }
  return Sharding::subgroup(tiles.reshape(dims), replicated.subgroup_types());
}

// Tiles of size-1 dims become replication as XLA's ReshapeSharding makes
// them: the tile array reshaped, device order kept ([1,2,4] on dims
// [8,1,128] -> [1,1,4,2] with the same device list), not transposed (a
// size-1 dim's extra tiles hold only padding, so either is a valid layout).
// With manual subgroups: partially_replicate_on_dims.
Sharding replicate_unit_dims(const Sharding& sharding, std::span<const int64_t> unit) {
  const auto& types = sharding.subgroup_types();
  const bool plain = types.empty() || sharding.replicate_on_last_tile_dim();
  std::vector<int64_t> dims = sharding.data_tile_dims();
  int64_t moved = 1;
  for (int64_t d : unit) {
    moved *= dims[static_cast<size_t>(d)];
    dims[static_cast<size_t>(d)] = 1;
  }
  if (moved == 1 || !plain)
    return moved == 1 ? sharding : partially_replicate_on_dims(sharding, unit);
  const int64_t rank = static_cast<int64_t>(dims.size());
  dims.push_back(moved * (types.empty() ? 1 : sharding.tile_assignment().dim(rank)));
  return Sharding::partial_tile(
      TileAssignment::from_devices(std::move(dims), sharding.tile_assignment().to_vector()));
}

// Dim ranges [src_begin, src_end) <-> [tgt_begin, tgt_end) with equal element
// counts, cut wherever the running products of both shapes agree.
struct Block {
  int64_t src_begin, src_end, tgt_begin, tgt_end;
};
std::vector<Block> independent_blocks(std::span<const int64_t> src, std::span<const int64_t> tgt) {
  std::vector<Block> blocks;
  size_t i = 0, j = 0;
  while (i < src.size() || j < tgt.size()) {
    Block b{static_cast<int64_t>(i), 0, static_cast<int64_t>(j), 0};
    int64_t ps = 1, pt = 1;
    if (i < src.size()) ps *= src[i++];
    if (j < tgt.size()) pt *= tgt[j++];
    while (ps != pt) {
      if (ps < pt && i < src.size()) {
        ps *= src[i++];
      } else if (j < tgt.size()) {
        pt *= tgt[j++];
      } else {
        ps *= src[i++];
      }
    }
    b.src_end = static_cast<int64_t>(i);
    b.tgt_end = static_cast<int64_t>(j);
    blocks.push_back(b);
  }
  return blocks;
}

std::vector<int64_t> range_complement(int64_t begin, int64_t end, int64_t rank) {
  std::vector<int64_t> out;
  for (int64_t d = 0; d < rank; ++d) {
    if (d < begin || d >= end) out.push_back(d);
  }
  return out;
}

// Reshapes the tiling of `keep` (source dims inside block b) alone.
std::optional<Sharding> reshape_block(std::span<const int64_t> src, std::span<const int64_t> tgt,
                                      const Sharding& sharding, const Block& b,
                                      std::span<const int64_t> keep) {
  const auto src_rank = static_cast<int64_t>(src.size());
  const Sharding part = partially_replicate_on_all_dims_except(sharding, keep);
  if (!part.is_tiled() || part.num_tiles() == 1) return std::nullopt;
  const Sharding local =
      remove_shape_dims(part, range_complement(b.src_begin, b.src_end, src_rank));
  auto reshaped = reshape_sharding(
      src.subspan(static_cast<size_t>(b.src_begin), static_cast<size_t>(b.src_end - b.src_begin)),
      tgt.subspan(static_cast<size_t>(b.tgt_begin), static_cast<size_t>(b.tgt_end - b.tgt_begin)),
      local);
  if (!reshaped) return std::nullopt;
  return add_shape_dims(*reshaped,
                        range_complement(b.tgt_begin, b.tgt_end, static_cast<int64_t>(tgt.size())));
}

}  // namespace

std::optional<Sharding> reshape_sharding(std::span<const int64_t> source_dims,
                                         std::span<const int64_t> target_dims,
                                         const Sharding& sharding) {
  if (!sharding.is_tiled()) return sharding;
  assert(product_of(source_dims) == product_of(target_dims));
  assert(sharding.tiled_data_rank() == static_cast<int64_t>(source_dims.size()));
  if (sharding.num_tiles() == 1) {
    return all_data_dims_replicated(sharding, static_cast<int64_t>(target_dims.size()));
  }
  // Size-1 dims: sharded source ones become replication, then drop them all.
  const auto src_unit = indices_of_size_one(source_dims);
  const Sharding cleaned = remove_shape_dims(replicate_unit_dims(sharding, src_unit), src_unit);
  if (!cleaned.is_tiled() || cleaned.num_tiles() == 1) return std::nullopt;
  auto reshaped = reshape_without_unit_dims(without_size_one(source_dims),
                                            without_size_one(target_dims), cleaned);
  if (!reshaped) return std::nullopt;
  return add_shape_dims(*reshaped, indices_of_size_one(target_dims));
}

Sharding propagate_through_reshape(std::span<const int64_t> source_dims,
                                   std::span<const int64_t> target_dims, const Sharding& sharding) {
  if (!sharding.is_tiled()) return sharding;
  if (auto strict = reshape_sharding(source_dims, target_dims, sharding)) return *strict;
  const auto tiles = sharding.data_tile_dims();
  std::optional<Sharding> result;
  auto offer = [&](const Sharding& candidate) {
    if (!result) {
      result = candidate;
    } else if (auto merged = merge_if_compatible(*result, candidate)) {
      result = *merged;
    }
  };
  for (const Block& b : independent_blocks(source_dims, target_dims)) {
    std::vector<int64_t> sharded;
    for (int64_t d = b.src_begin; d < b.src_end; ++d) {
      if (tiles[static_cast<size_t>(d)] > 1) sharded.push_back(d);
    }
    if (sharded.empty()) continue;
    if (auto whole = reshape_block(source_dims, target_dims, sharding, b, sharded)) {
      offer(*whole);
      continue;
    }
    for (int64_t d : sharded) {  // fall back to each sharded dim alone
      const int64_t keep[] = {d};
      if (auto single = reshape_block(source_dims, target_dims, sharding, b, keep)) offer(*single);
    }
  }
  if (result) return *result;
  return all_data_dims_replicated(sharding, static_cast<int64_t>(target_dims.size()));
}

}  // namespace podsim::compiler
