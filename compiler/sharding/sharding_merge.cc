// Sharding algebra: combining and ordering shardings (docs/reference/gspmd.md#sharding-algebra:
// merge if compatible / merge / is sub-tiling /
// find common sharding; #which-sharding-is-better: "more specific").
//
// merge_if_compatible uses one exact method (ours): every device's new tile
// index is read off its tile indices under both inputs (a dim sharded on
// either side takes that side's index; sharded on both, they must agree);
// the merge exists iff every new tile (per manual group) then receives the
// same number of devices. Each device's new tile lies in both old tiles by
// construction; groups are sorted by the canonical factory.
#include <algorithm>
#include <cassert>
#include <variant>
#include <vector>

#include "compiler/sharding/sharding_util.h"

namespace podsim::compiler {

namespace {

// The per-device merge (file comment) done on digits instead of devices, for two iota tile
// arrays: the result is the iota array whose factors are the cell digits followed by the
// remaining digits. kIncompatible: no merge exists; kUnknown: the digit form does not apply
// (use the device path). Why: docs/compiler.md#merging-iota-shardings-on-digits
enum class DigitMerge { kIncompatible, kUnknown };
using Digits = std::vector<size_t>;  // elementary digit ids, major -> minor

struct MergeRequest {
  const Sharding& lhs;
  const Sharding& rhs;
  std::span<const int64_t> ta, tb, merged;
  int64_t manual_a, manual_b, manual_size, group;
};

std::variant<Sharding, DigitMerge> merge_by_digits(const MergeRequest& r) {
  const auto pa = r.lhs.tile_assignment().factors_by_dim();
  const auto pb = r.rhs.tile_assignment().factors_by_dim();
  if (!pa || !pb) return DigitMerge::kUnknown;
  const int64_t devices = r.lhs.total_num_tiles();
  std::vector<int64_t> bounds{1, devices};
  for (const auto* by_dim : {&*pa, &*pb})
    for (const auto& pieces : *by_dim)
      for (const auto& f : pieces) {
        bounds.push_back(f.stride);
        bounds.push_back(f.stride * f.size);
      }
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  if (bounds.back() != devices) return DigitMerge::kUnknown;
  for (size_t j = 0; j + 1 < bounds.size(); ++j)
    if (bounds[j + 1] % bounds[j] != 0) return DigitMerge::kUnknown;
  // Elementary digit j: stride bounds[j], size bounds[j+1] / bounds[j].
  const size_t digit_count = bounds.size() - 1;
  auto digits_of = [&](const std::vector<TileAssignment::IotaFactor>& pieces) {
    Digits out;
    for (const auto& f : pieces)
      for (size_t j = digit_count; j-- > 0;)
        if (bounds[j] >= f.stride && bounds[j] < f.stride * f.size) out.push_back(j);
    return out;
  };
  Digits cell;
  for (size_t d = 0; d < r.merged.size(); ++d) {
    const Digits da = digits_of((*pa)[d]), db = digits_of((*pb)[d]);
    if (r.ta[d] > 1 && r.tb[d] > 1 && da != db) return DigitMerge::kIncompatible;
    const Digits& chosen = r.ta[d] > 1 ? da : db;
    cell.insert(cell.end(), chosen.begin(), chosen.end());
  }
  if (r.manual_a >= 0) {
    const Digits ma = digits_of((*pa)[static_cast<size_t>(r.manual_a)]);
    if (ma != digits_of((*pb)[static_cast<size_t>(r.manual_b)])) return DigitMerge::kIncompatible;
    cell.insert(cell.end(), ma.begin(), ma.end());
  }
  std::vector<bool> used(digit_count, false);
  for (size_t j : cell) {
    if (used[j]) return DigitMerge::kIncompatible;  // a cell would get too many devices
    used[j] = true;
  }
  Digits order = cell;
  for (size_t j = digit_count; j-- > 0;)
    if (!used[j]) order.push_back(j);
  // iota(reshape) with reshape = digit sizes by decreasing stride; result
  // position k reads reshape dim (digit_count - 1 - order[k]).
  std::vector<int64_t> reshape, perm;
  for (size_t j = digit_count; j-- > 0;) reshape.push_back(bounds[j + 1] / bounds[j]);
  for (size_t j : order) perm.push_back(static_cast<int64_t>(digit_count - 1 - j));
  std::vector<int64_t> dims(r.merged.begin(), r.merged.end());
  std::vector<SubgroupType> types;
  if (r.manual_a >= 0) {
    dims.push_back(r.manual_size);
    types.push_back(SubgroupType::kManual);
  }
  dims.push_back(r.group);
  types.push_back(SubgroupType::kReplicated);
  return Sharding::subgroup(TileAssignment::iota(dims, reshape, perm), types);
}

// `s` with every device id d replaced by map(d) (same tile dims and kinds).
template <typename Map>
Sharding relabel_devices(const Sharding& s, Map map) {
  std::vector<int64_t> ids = s.tile_assignment().to_vector();
  for (int64_t& d : ids) d = map(d);
  TileAssignment tiles = TileAssignment::from_devices(s.tile_assignment().dims(), std::move(ids));
  return s.subgroup_types().empty() ? Sharding::tiled(std::move(tiles))
                                    : Sharding::subgroup(std::move(tiles), s.subgroup_types());
}

// Merge of two tilings over the same device subset, through dense ranks:
// nullopt when the ids are already 0..n-1 (the direct path applies); an
// empty result when the two cover different ids.
std::optional<std::optional<Sharding>> merge_over_device_subset(const Sharding& lhs,
                                                                const Sharding& rhs,
                                                                int64_t min_tiles) {
  std::vector<int64_t> ids = lhs.tile_assignment().to_vector();
  std::sort(ids.begin(), ids.end());
  const bool dense =
      !ids.empty() && ids.front() == 0 && ids.back() == static_cast<int64_t>(ids.size()) - 1;
  if (dense) return std::nullopt;
  std::vector<int64_t> other = rhs.tile_assignment().to_vector();
  std::sort(other.begin(), other.end());
  if (other != ids || std::adjacent_find(ids.begin(), ids.end()) != ids.end())
    return std::optional<Sharding>();  // different or repeated ids: no merge
  auto rank_of = [&](int64_t d) {
    return static_cast<int64_t>(std::lower_bound(ids.begin(), ids.end(), d) - ids.begin());
  };
  std::optional<Sharding> merged =
      merge_if_compatible(relabel_devices(lhs, rank_of), relabel_devices(rhs, rank_of), min_tiles);
  if (!merged || !merged->is_tiled()) return merged;
  return relabel_devices(*merged, [&](int64_t r) { return ids[static_cast<size_t>(r)]; });
}

}  // namespace

std::optional<Sharding> merge_if_compatible(const Sharding& a, const Sharding& b,
                                            int64_t min_tiles) {
  const Sharding lhs = a.without_group_and_metadata();
  const Sharding rhs = b.without_group_and_metadata();
  if (lhs.is_replicated() && rhs.is_tiled())
    return rhs.num_tiles() >= min_tiles ? std::optional(rhs) : std::nullopt;
  if (rhs.is_replicated() && lhs.is_tiled())
    return lhs.num_tiles() >= min_tiles ? std::optional(lhs) : std::nullopt;
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
  // Tilings over a device subset ({devices=[2,2]0,1,4,5}): merged over the
  // subset's ranks, then the ids put back; both must cover the same ids.
  if (auto dense = merge_over_device_subset(lhs, rhs, min_tiles)) return *dense;
  const MergeRequest request{lhs, rhs, ta, tb, merged, manual_a, manual_b, manual_size, group};
  auto by_digits = merge_by_digits(request);
  if (auto* result = std::get_if<Sharding>(&by_digits)) return *result;
  if (std::get<DigitMerge>(by_digits) == DigitMerge::kIncompatible) return std::nullopt;
  // Tile position of every device under each input: pos[device] = flat
  // position, -1 if absent. The inputs are checked to be permutations of
  // [0, devices) (every validated sharding is); anything else has no merge.
  auto positions_by_device =
      [devices](const TileAssignment& tiles) -> std::optional<std::vector<int64_t>> {
    std::vector<int64_t> pos(static_cast<size_t>(devices), -1);
    const std::vector<int64_t> values = tiles.to_vector();
    for (size_t p = 0; p < values.size(); ++p) {
      const int64_t device = values[p];
      if (device < 0 || device >= devices || pos[static_cast<size_t>(device)] >= 0)
        return std::nullopt;
      pos[static_cast<size_t>(device)] = static_cast<int64_t>(p);
    }
    return pos;
  };
  const auto a_pos = positions_by_device(lhs.tile_assignment());
  const auto b_pos = positions_by_device(rhs.tile_assignment());
  if (!a_pos || !b_pos) return std::nullopt;
  const auto& a_dims = lhs.tile_assignment().dims();
  const auto& b_dims = rhs.tile_assignment().dims();
  auto unravel_into = [](int64_t flat, const std::vector<int64_t>& dims,
                         std::vector<int64_t>& index) {
    for (size_t i = dims.size(); i-- > 0;) {
      index[i] = flat % dims[i];
      flat /= dims[i];
    }
  };
  std::vector<int64_t> ia(a_dims.size()), ib(b_dims.size());
  // Cell c (row-major over merged dims, then manual index) owns the slots
  // [c * group, (c + 1) * group) of `flat`; devices are visited ascending.
  std::vector<int64_t> flat(static_cast<size_t>(devices));
  std::vector<int64_t> filled(static_cast<size_t>(cells), 0);
  for (int64_t device = 0; device < devices; ++device) {
    unravel_into((*a_pos)[static_cast<size_t>(device)], a_dims, ia);
    unravel_into((*b_pos)[static_cast<size_t>(device)], b_dims, ib);
    int64_t cell = 0;
    for (size_t d = 0; d < merged.size(); ++d) {
      const int64_t xa = ia[d], xb = ib[d];
      if (ta[d] > 1 && tb[d] > 1 && xa != xb) return std::nullopt;
      cell = cell * merged[d] + (ta[d] > 1 ? xa : xb);
    }
    if (manual_a >= 0) {
      const int64_t ma = ia[static_cast<size_t>(manual_a)];
      if (ma != ib[static_cast<size_t>(manual_b)]) return std::nullopt;
      cell = cell * manual_size + ma;
    }
    int64_t& count = filled[static_cast<size_t>(cell)];
    if (count == group) return std::nullopt;
    flat[static_cast<size_t>(cell * group + count)] = device;
    ++count;
  }
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
  if (may_combine_partial && to_merge.has_partial_replication() && dst.has_partial_replication() &&
      to_merge.total_num_tiles() == dst.total_num_tiles()) {
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
  // Per device, without allocation: the tile position under each sharding
  // (first occurrence, as index_of) unravelled to data-tile indices.
  const TileAssignment& sub_tiles = sub.tile_assignment();
  const TileAssignment& outer_tiles = sharding.tile_assignment();
  const std::vector<int64_t> outer_values = outer_tiles.to_vector();
  const std::vector<int64_t> sub_values = sub_tiles.to_vector();
  int64_t max_device = 0;
  for (int64_t device : outer_values) max_device = std::max(max_device, device);
  for (int64_t device : sub_values) max_device = std::max(max_device, device);
  auto first_positions = [max_device](const std::vector<int64_t>& values) {
    std::vector<int64_t> pos(static_cast<size_t>(max_device) + 1, -1);
    for (size_t p = values.size(); p-- > 0;) {
      if (values[p] >= 0) pos[static_cast<size_t>(values[p])] = static_cast<int64_t>(p);
    }
    return pos;
  };
  const std::vector<int64_t> sub_pos = first_positions(sub_values);
  const std::vector<int64_t> outer_pos = first_positions(outer_values);
  const auto sub_shape = shard_shape(sub, dims);
  const auto outer_shape = shard_shape(sharding, dims);
  std::vector<int64_t> inner_index(static_cast<size_t>(sub_tiles.rank()));
  std::vector<int64_t> outer_index(static_cast<size_t>(outer_tiles.rank()));
  auto unravel_into = [](int64_t flat, const std::vector<int64_t>& tile_dims,
                         std::vector<int64_t>& index) {
    for (size_t i = tile_dims.size(); i-- > 0;) {
      index[i] = flat % tile_dims[i];
      flat /= tile_dims[i];
    }
  };
  for (const int64_t device : outer_values) {
    if (device < 0) return false;
    const int64_t sub_p = sub_pos[static_cast<size_t>(device)];
    if (sub_p < 0) return false;
    unravel_into(sub_p, sub_tiles.dims(), inner_index);
    // The first position of `device` in the outer array (as index_of).
    unravel_into(outer_pos[static_cast<size_t>(device)], outer_tiles.dims(), outer_index);
    bool inner_empty = false;
    for (size_t d = 0; d < dims.size(); ++d) {
      if (std::min(inner_index[d] * sub_shape[d], dims[d]) >=
          std::min((inner_index[d] + 1) * sub_shape[d], dims[d]))
        inner_empty = true;
    }
    if (inner_empty) continue;  // padding only: holds no data
    for (size_t d = 0; d < dims.size(); ++d) {
      const int64_t inner_offset = std::min(inner_index[d] * sub_shape[d], dims[d]);
      const int64_t inner_limit = std::min((inner_index[d] + 1) * sub_shape[d], dims[d]);
      const int64_t outer_offset = std::min(outer_index[d] * outer_shape[d], dims[d]);
      const int64_t outer_limit = std::min((outer_index[d] + 1) * outer_shape[d], dims[d]);
      if (inner_offset < outer_offset || inner_limit > outer_limit) return false;
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
