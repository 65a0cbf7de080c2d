// Device -> tile coordinate as digit arithmetic, without per-device loops.
//
// On an iota tile array every tile coordinate is a function of the device id
// made of "digits": coordinate(device) = mixed-radix number, major -> minor,
// of the digits (device / stride_k) % size_k of its pieces
// (TileAssignment::factors_by_dim). Keeping that function as its canonical
// piece list lets the partitioner
//  * compare two coordinate functions over all devices at once (equal
//    canonical lists => equal on every device), and
//  * emit a device's coordinate as a few scalar ops on partition-id
//    instead of an N-entry table,
// so its work does not grow with the device count. Explicit (non-iota)
// arrays have no such form: callers keep a per-device path for them.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "compiler/sharding/sharding.h"

namespace podsim::compiler {

using DigitPieces = std::vector<TileAssignment::IotaFactor>;

// Canonical form of a coordinate function (canonical_iota_factors: the
// same merge rule as the iota form of tile_assignment.h).
DigitPieces canonical_pieces(const DigitPieces& pieces);

// coordinate(device) of a piece list (tests and per-device fallbacks).
int64_t evaluate_pieces(const DigitPieces& pieces, int64_t device);

// Canonical coordinate functions of the first `rank` tile dims of `sharding`
// (its data dims), i.e. what tile_index_for_device returns, as functions.
// A sharding that is not tiled (replicated, maximal, manual) has coordinate 0
// everywhere: `rank` empty lists. nullopt for explicit tile arrays.
std::optional<std::vector<DigitPieces>> tile_coordinate_pieces(const Sharding& sharding,
                                                               int64_t rank);

// Coordinate functions of the two dims of an iota array [rows, cols]
// (<= reshape_dims T(perm), perm empty = identity): .first gives a device's
// row, .second its column. nullopt if a dim cuts an iota factor unevenly.
std::optional<std::pair<DigitPieces, DigitPieces>> iota_matrix_pieces(
    int64_t rows, int64_t cols, const std::vector<int64_t>& reshape_dims,
    const std::vector<int64_t>& transpose_perm);

// ---- Elementary digits: comparing the layouts of several shardings ----
//
// Cutting the device id at every stride boundary of several iota arrays
// gives "elementary" digits (when the boundaries form a divisibility chain,
// as for arrays that all refine one mesh). Digit j has stride bounds[j] and
// size bounds[j+1] / bounds[j]; every coordinate function is then an ordered
// list of digit ids (major -> minor), and two coordinates are equal on
// every device iff their lists are equal.
using DigitIds = std::vector<size_t>;

struct DigitGrid {
  std::vector<int64_t> bounds;  // ascending, bounds.front() == 1, back() == devices
  size_t digit_count() const { return bounds.size() - 1; }
  int64_t size(size_t digit) const { return bounds[digit + 1] / bounds[digit]; }
  DigitIds digits_of(const DigitPieces& pieces) const;
  int64_t product(const DigitIds& digits) const;
  // The coordinate function of a digit list (canonical pieces).
  DigitPieces pieces_of(const DigitIds& digits) const;
};

// The layout of a sharding on a grid: the digits of each data dim's tile
// coordinate and of the replication dim (no manual subgroups).
struct ShardingDigits {
  std::vector<DigitIds> data;
  DigitIds replicated;
};

// The common grid of `shardings` (tiled or replicated, no manual subgroups,
// iota arrays over `devices`) and each one's layout on it; nullopt when one
// does not qualify or the boundaries are not a divisibility chain.
struct GridLayouts {
  DigitGrid grid;
  std::vector<ShardingDigits> layouts;
};
std::optional<GridLayouts> layouts_on_common_grid(std::span<const Sharding> shardings, int64_t rank,
                                                  int64_t devices);

// The canonical sharding whose data dim d has coordinate digits data[d]; the
// digits in no list become the replication dim.
Sharding sharding_from_digits(const DigitGrid& grid, const std::vector<DigitIds>& data);

// Iota array [devices / m, m] whose column is the coordinate of `column`
// digits and whose row numbers the remaining digits: the device groups
// that differ only in those digits, member k having digit value k.
TileAssignment groups_from_digits(const DigitGrid& grid, const DigitIds& column);

}  // namespace podsim::compiler
