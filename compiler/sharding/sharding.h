// Sharding: how one value (or each leaf of a tuple) is laid out over the
// devices, with XLA HloSharding semantics (docs/reference/gspmd.md#sharding-representation).
//
// Immutable value type. Every factory canonicalises (docs/reference/gspmd.md#normalisation), so two
// Shardings denoting the same layout compare equal:
//  * a tiled sharding whose tile array has one element is {replicated};
//  * trailing subgroup dims of size 1 are dropped, dims of one type merged,
//    types ordered manual before replicated;
//  * all data dims 1 and a single subgroup type -> {manual} / {replicated};
//  * a lone replicated subgroup is last_tile_dim_replicate;
//  * members of each replication group are sorted ascending.
// Metadata is provenance only and ignored by operator==.
// This component sits below the IR: shapes are plain dim lists.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "compiler/sharding/tile_assignment.h"

namespace podsim::compiler {

// Type of a trailing ("subgroup") tile dim: its devices hold the same data
// tile and are either hand-written per device (manual) or copies (replicated).
// Declaration order is the canonical order of subgroup dims.
enum class SubgroupType { kManual, kReplicated };

// shard_as K: all members end with the same sharding; shard_like K: hints.
struct ShardGroup {
  enum class Kind { kAs, kLike };
  int64_t id = 0;
  Kind kind = Kind::kAs;
  bool operator==(const ShardGroup&) const = default;
};

class Sharding {
 public:
  enum class Kind { kReplicated, kMaximal, kManual, kUnknown, kTiled, kTuple };

  Sharding() = default;  // {replicated}
  static Sharding replicated();
  static Sharding manual();
  static Sharding unknown();
  static Sharding maximal(int64_t device);
  // Plain tiling: every tile dim is a data dim.
  static Sharding tiled(TileAssignment tiles);
  // Last tile dim enumerates replication groups (last_tile_dim_replicate).
  static Sharding partial_tile(TileAssignment tiles);
  // The trailing types.size() tile dims are subgroup dims of those types.
  static Sharding subgroup(TileAssignment tiles, std::vector<SubgroupType> types);
  // Flat tuple of leaves (nested tuples are flattened, pre-order).
  static Sharding tuple(std::vector<Sharding> leaves);

  Sharding with_group(std::optional<ShardGroup> group) const;
  Sharding with_metadata(std::vector<std::string> metadata) const;
  Sharding without_group_and_metadata() const;

  Kind kind() const { return kind_; }
  bool is_replicated() const { return kind_ == Kind::kReplicated; }
  bool is_maximal() const { return kind_ == Kind::kMaximal; }  // one device
  // XLA's IsTileMaximal: the whole value on every holder (replicated or one device).
  bool is_tile_maximal() const { return is_replicated() || is_maximal(); }
  bool is_manual() const { return kind_ == Kind::kManual; }
  bool is_unknown() const { return kind_ == Kind::kUnknown; }
  bool is_tiled() const { return kind_ == Kind::kTiled; }
  bool is_tuple() const { return kind_ == Kind::kTuple; }

  // kTiled: the full tile array (data dims then subgroup dims).
  // kMaximal: dims [1] holding the device.
  const TileAssignment& tile_assignment() const { return tiles_; }
  // Types of the trailing tile dims (kTiled only; canonical order).
  const std::vector<SubgroupType>& subgroup_types() const { return subgroup_types_; }
  bool replicate_on_last_tile_dim() const;
  bool has_partial_replication() const { return subgroup_replication_dim() >= 0; }
  bool has_manual_subgroup() const { return subgroup_manual_dim() >= 0; }
  const std::vector<Sharding>& tuple_elements() const { return tuple_elements_; }
  const std::optional<ShardGroup>& group() const { return group_; }
  const std::vector<std::string>& metadata() const { return metadata_; }

  // Derived quantities (docs/reference/gspmd.md#tile-extents-and-padding). Data rank is only
  // defined for kTiled.
  int64_t tiled_data_rank() const;
  int64_t num_tiles() const;                 // distinct data tiles; 1 unless tiled
  int64_t total_num_tiles() const;           // devices used; 1 unless tiled
  int64_t subgroup_replication_dim() const;  // tile dim index or -1
  int64_t subgroup_manual_dim() const;       // tile dim index or -1
  // Data tile dims of a tiled sharding (tile dims without subgroup dims).
  std::vector<int64_t> data_tile_dims() const;
  // Tiled: the data-tile index of `device` (nullopt if not in the array).
  std::optional<std::vector<int64_t>> tile_index_for_device(int64_t device) const;
  // Tiled: the devices holding data tile `tile_index` (all subgroup cells).
  std::vector<int64_t> devices_for_tile(std::span<const int64_t> tile_index) const;
  // Tiled: sets of devices holding identical data (same data tile and same
  // manual subgroup), each sorted; one group per device if fully tiled.
  std::vector<std::vector<int64_t>> replication_groups() const;
  std::optional<int64_t> unique_device() const;  // kMaximal

  // Throws UserError (with `where`) unless the leaf sharding fits a tensor of
  // `rank` dims on `num_devices` devices: data rank equals rank, ids in
  // [0, num_devices), each once, element count == num_devices.
  void validate(int64_t rank, int64_t num_devices, const SourceLocation& where = {}) const;
  // The same for a tuple sharding (one rank per leaf) or a leaf (one rank).
  void validate_leaves(std::span<const int64_t> leaf_ranks, int64_t num_devices,
                       const SourceLocation& where = {}) const;

  // XLA text form (sharding_text.cc); the iota form is printed whenever the
  // tile array has one. Metadata is not printed.
  std::string to_string() const;

  bool operator==(const Sharding& other) const;

 private:
  Kind kind_ = Kind::kReplicated;
  TileAssignment tiles_;
  std::vector<SubgroupType> subgroup_types_;
  std::vector<Sharding> tuple_elements_;
  std::optional<ShardGroup> group_;
  std::vector<std::string> metadata_;
};

// Parses XLA's text form ("{devices=[2,1]0,1}", "{replicated}", tuples,
// shard_as/shard_like, metadata={...} which is kept verbatim). Errors are
// UserErrors whose column points inside `text` (offset from where.column).
Sharding parse_sharding(std::string_view text, const SourceLocation& where = {});

// ---- Per-device extents of a leaf sharding over a tensor (gspmd.md#tile-extents-and-padding) ----

// Padded per-device shape: ceil(D / n) on every sharded dim.
std::vector<int64_t> shard_shape(const Sharding& sharding, std::span<const int64_t> dims);

// The part of the tensor a device holds: along a dim of size D cut n ways
// with t = ceil(D/n), tile i covers [min(i*t, D), min((i+1)*t, D)).
// Replicated/maximal/manual: the whole tensor.
struct ShardRegion {
  std::vector<int64_t> offsets;
  std::vector<int64_t> limits;
  bool empty() const;
};
ShardRegion shard_region(const Sharding& sharding, std::span<const int64_t> dims, int64_t device);

// Every sharded dim divides evenly. Tile-maximal: true only when replicated
// (as XLA). Manual: true. Leaf shardings only.
bool evenly_partitions(const Sharding& sharding, std::span<const int64_t> dims);

std::string_view to_string(SubgroupType type);

}  // namespace podsim::compiler
