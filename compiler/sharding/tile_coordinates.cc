// Tile coordinates as digit functions of the device id; see tile_coordinates.h.
#include "compiler/sharding/tile_coordinates.h"

#include <algorithm>
#include <utility>

namespace podsim::compiler {

DigitPieces canonical_pieces(const DigitPieces& pieces) { return canonical_iota_factors(pieces); }

int64_t evaluate_pieces(const DigitPieces& pieces, int64_t device) {
  int64_t value = 0;
  for (const auto& f : pieces) value = value * f.size + (device / f.stride) % f.size;
  return value;
}

std::optional<std::vector<DigitPieces>> tile_coordinate_pieces(const Sharding& sharding,
                                                               int64_t rank) {
  std::vector<DigitPieces> out(static_cast<size_t>(rank));
  if (!sharding.is_tiled()) return out;
  const auto by_dim = sharding.tile_assignment().factors_by_dim();
  if (!by_dim) return std::nullopt;
  for (int64_t d = 0; d < rank && d < static_cast<int64_t>(by_dim->size()); ++d)
    out[static_cast<size_t>(d)] = canonical_pieces((*by_dim)[static_cast<size_t>(d)]);
  return out;
}

std::optional<std::pair<DigitPieces, DigitPieces>> iota_matrix_pieces(
    int64_t rows, int64_t cols, const std::vector<int64_t>& reshape_dims,
    const std::vector<int64_t>& transpose_perm) {
  const std::vector<int64_t> reshape =
      reshape_dims.empty() ? std::vector<int64_t>{rows * cols} : reshape_dims;
  if (product_of(reshape) != rows * cols) return std::nullopt;
  const TileAssignment matrix = TileAssignment::iota({rows, cols}, reshape, transpose_perm);
  const auto by_dim = matrix.factors_by_dim();
  if (!by_dim) return std::nullopt;
  return std::make_pair(canonical_pieces((*by_dim)[0]), canonical_pieces((*by_dim)[1]));
}

DigitIds DigitGrid::digits_of(const DigitPieces& pieces) const {
  DigitIds out;
  for (const auto& f : pieces)
    for (size_t j = digit_count(); j-- > 0;)
      if (bounds[j] >= f.stride && bounds[j] < f.stride * f.size) out.push_back(j);
  return out;
}

int64_t DigitGrid::product(const DigitIds& digits) const {
  int64_t p = 1;
  for (size_t j : digits) p *= size(j);
  return p;
}

DigitPieces DigitGrid::pieces_of(const DigitIds& digits) const {
  DigitPieces pieces;
  for (size_t j : digits) pieces.push_back({size(j), bounds[j]});
  return canonical_pieces(pieces);
}

std::optional<GridLayouts> layouts_on_common_grid(std::span<const Sharding> shardings, int64_t rank,
                                                  int64_t devices) {
  std::vector<std::vector<DigitPieces>>
      by_dim;  // per sharding: data dims, then the replication dim
  GridLayouts out;
  out.grid.bounds = {1, devices};
  for (const Sharding& s : shardings) {
    std::vector<DigitPieces> dims(static_cast<size_t>(rank) + 1);
    if (s.is_tiled()) {
      if (s.has_manual_subgroup() || s.tiled_data_rank() != rank || s.total_num_tiles() != devices)
        return std::nullopt;
      const auto factors = s.tile_assignment().factors_by_dim();
      if (!factors) return std::nullopt;
      for (size_t d = 0; d < factors->size(); ++d) dims[d] = (*factors)[d];
    } else if (s.is_replicated()) {
      dims.back() = {{devices, 1}};
    } else {
      return std::nullopt;
    }
    for (const auto& pieces : dims)
      for (const auto& f : pieces) {
        out.grid.bounds.push_back(f.stride);
        out.grid.bounds.push_back(f.stride * f.size);
      }
    by_dim.push_back(std::move(dims));
  }
  auto& bounds = out.grid.bounds;
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  if (bounds.back() != devices) return std::nullopt;
  for (size_t j = 0; j + 1 < bounds.size(); ++j)
    if (bounds[j + 1] % bounds[j] != 0) return std::nullopt;
  for (const auto& dims : by_dim) {
    ShardingDigits layout;
    for (int64_t d = 0; d < rank; ++d)
      layout.data.push_back(out.grid.digits_of(dims[static_cast<size_t>(d)]));
    layout.replicated = out.grid.digits_of(dims.back());
    out.layouts.push_back(std::move(layout));
  }
  return out;
}

namespace {

// iota(reshape) with reshape = digit sizes by decreasing stride; result
// position k reads reshape dim (digit_count - 1 - order[k]).
TileAssignment iota_of_digit_order(const DigitGrid& grid, std::vector<int64_t> dims,
                                   const DigitIds& order) {
  const size_t n = grid.digit_count();
  std::vector<int64_t> reshape, perm;
  for (size_t j = n; j-- > 0;) reshape.push_back(grid.size(j));
  for (size_t j : order) perm.push_back(static_cast<int64_t>(n - 1 - j));
  if (reshape.empty()) return TileAssignment::iota(std::move(dims));
  return TileAssignment::iota(std::move(dims), reshape, perm);
}

// `order` followed by every digit it lacks, by decreasing stride.
DigitIds complete_order(const DigitGrid& grid, DigitIds order) {
  std::vector<bool> used(grid.digit_count(), false);
  for (size_t j : order) used[j] = true;
  for (size_t j = grid.digit_count(); j-- > 0;)
    if (!used[j]) order.push_back(j);
  return order;
}

}  // namespace

Sharding sharding_from_digits(const DigitGrid& grid, const std::vector<DigitIds>& data) {
  DigitIds order;
  std::vector<int64_t> dims;
  for (const DigitIds& digits : data) {
    order.insert(order.end(), digits.begin(), digits.end());
    dims.push_back(grid.product(digits));
  }
  const int64_t cells = product_of(dims);
  dims.push_back(grid.bounds.back() / cells);
  return Sharding::partial_tile(
      iota_of_digit_order(grid, std::move(dims), complete_order(grid, order)));
}

TileAssignment groups_from_digits(const DigitGrid& grid, const DigitIds& column) {
  const int64_t m = grid.product(column);
  DigitIds rows;
  for (size_t j : complete_order(grid, {}))
    if (std::find(column.begin(), column.end(), j) == column.end()) rows.push_back(j);
  rows.insert(rows.end(), column.begin(), column.end());
  return iota_of_digit_order(grid, {grid.bounds.back() / m, m}, rows);
}

}  // namespace podsim::compiler
