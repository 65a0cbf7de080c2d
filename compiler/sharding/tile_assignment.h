// TileAssignment: the N-d array of device ids behind a tiled sharding, in one of two encodings
// (docs/reference/gspmd.md#tile-assignment): the iota form [d0..dk]<=[r0..rm]T(p0..pm), stored
// as canonical positional {size, stride} factors, or an explicit row-major device list. Every
// constructor detects iota-expressible arrays, so equality is a field comparison.
// The canonical factor form: docs/compiler.md#tile-assignment-encodings
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace podsim::compiler {

class TileAssignment {
 public:
  // One positional factor of the iota form (see file comment).
  struct IotaFactor {
    int64_t size = 1;
    int64_t stride = 1;
    bool operator==(const IotaFactor&) const = default;
  };
  // The printable iota form: reshape dims r and transpose perm p (p empty
  // when no transpose is needed).
  struct IotaForm {
    std::vector<int64_t> reshape_dims;
    std::vector<int64_t> transpose_perm;
  };

  // A single device 0 with dims [1].
  TileAssignment();
  // iota(prod dims) reshaped to dims: 0,1,2,...
  static TileAssignment iota(std::vector<int64_t> dims);
  // [dims]<=[reshape_dims]T(transpose_perm); perm empty = identity.
  // Preconditions (assert): perm is a permutation of reshape_dims' indices and
  // the products agree. The text parser checks these for user input.
  static TileAssignment iota(std::vector<int64_t> dims, std::span<const int64_t> reshape_dims,
                             std::span<const int64_t> transpose_perm);
  // An explicit array; converted to iota form when it is one. Precondition:
  // devices.size() == product(dims). Ids are not validated here (Sharding's
  // validate() does that against a device count).
  static TileAssignment from_devices(std::vector<int64_t> dims, std::vector<int64_t> devices);

  const std::vector<int64_t>& dims() const { return dims_; }
  int64_t rank() const { return static_cast<int64_t>(dims_.size()); }
  int64_t dim(int64_t i) const { return dims_[static_cast<size_t>(i)]; }
  int64_t num_elements() const;

  int64_t at(std::span<const int64_t> index) const;
  int64_t at_flat(int64_t flat_position) const;
  // Row-major materialisation (O(num_elements)).
  std::vector<int64_t> to_vector() const;
  // Index of the first occurrence of `device`, nullopt if absent.
  std::optional<std::vector<int64_t>> index_of(int64_t device) const;

  // Same element order, new dims (product must match, assert).
  TileAssignment reshape(std::vector<int64_t> new_dims) const;
  // result.dim(i) = dim(perm[i]); stays in iota form whenever possible.
  TileAssignment transpose(std::span<const int64_t> perm) const;
  // Sorts every row of the last dim ascending (canonical order of the members
  // of a replication group). Iota arrays are re-factored, not materialised,
  // whenever the last dim is made of whole iota factors.
  TileAssignment sort_last_dim() const;

  bool is_iota() const { return iota_.has_value(); }
  std::optional<IotaForm> iota_form() const;
  const std::optional<std::vector<IotaFactor>>& iota_factors() const { return iota_; }

  // Iota arrays whose dims fall on factor boundaries (always true after a
  // reshape/transpose of canonical shardings): for every dim the factor
  // pieces that make up its coordinate, major -> minor, so that the device at
  // index x has digit (device / stride) % size for each piece and x[i] is the
  // mixed-radix number of dim i's digits. nullopt for explicit arrays or a
  // dim boundary that cuts a factor unevenly. O(rank + factors).
  std::optional<std::vector<std::vector<IotaFactor>>> factors_by_dim() const;

  // "[2,2]<=[4]", "[2,2]<=[2,2]T(1,0)" or "[2,2]0,2,3,1" (the devices= payload).
  std::string to_string() const;

  bool operator==(const TileAssignment& other) const;

 private:
  std::vector<int64_t> dims_;
  std::optional<std::vector<IotaFactor>> iota_;          // set when iota-expressible
  std::shared_ptr<const std::vector<int64_t>> devices_;  // set otherwise
};

// Product of a list of dims (1 for an empty list).
int64_t product_of(std::span<const int64_t> dims);

// Canonical form of a list of iota factors: size-1 factors dropped,
// adjacent factors merged when they are one digit range (stride_k ==
// stride_{k+1} * size_{k+1}). The same positional function of the id.
std::vector<TileAssignment::IotaFactor> canonical_iota_factors(
    const std::vector<TileAssignment::IotaFactor>& factors);

}  // namespace podsim::compiler
