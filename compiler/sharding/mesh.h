// DeviceMesh and mesh_split: the user-facing way to write a sharding as
// "tensor dim i is split over mesh axes A, B" (GSPMD's mesh_split).
//
// A mesh is an ordered list of named axes, e.g. {x: 2, y: 4}; the device at
// mesh coordinate (i, j, ...) is the row-major index over the axes, or the
// entry of an explicit device list at that row-major position.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "compiler/sharding/sharding.h"

namespace podsim::compiler {

struct MeshAxis {
  std::string name;
  int64_t size = 1;
  bool operator==(const MeshAxis&) const = default;
};

class DeviceMesh {
 public:
  // Throws UserError on an empty/duplicate axis name, a size < 1, or an
  // explicit device list that is not a permutation of [0, product of sizes).
  explicit DeviceMesh(std::vector<MeshAxis> axes,
                      std::optional<std::vector<int64_t>> devices = std::nullopt,
                      const SourceLocation& where = {});

  const std::vector<MeshAxis>& axes() const { return axes_; }
  int64_t num_devices() const;
  std::optional<int64_t> axis_index(const std::string& name) const;
  std::vector<int64_t> axis_sizes() const;
  // The devices as an array shaped like the mesh.
  const TileAssignment& device_array() const { return devices_; }

 private:
  std::vector<MeshAxis> axes_;
  TileAssignment devices_;
};

// dims_mapping[i] = the mesh axes tensor dim i is split over, major first
// ({} = unsharded).
using DimsMapping = std::vector<std::vector<std::string>>;

// The sharding of a rank-`rank` tensor split as `dims_mapping` over `mesh`.
// Mesh axes used by no dim become partial replication. Errors (rank
// mismatch, unknown axis, axis used twice) are UserErrors at `where`.
Sharding mesh_split(int64_t rank, const DeviceMesh& mesh, const DimsMapping& dims_mapping,
                    const SourceLocation& where = {});
// Convenience form: each dim on at most one axis (nullopt = unsharded).
Sharding mesh_split(int64_t rank, const DeviceMesh& mesh,
                    const std::vector<std::optional<std::string>>& dims_mapping,
                    const SourceLocation& where = {});

// Inverse of mesh_split: which mesh axes shard each tensor dim, or nullopt if
// the sharding is no mesh split of `mesh` (manual, maximal, other device
// order, ...). Replicated needs `rank` (>= 0) to answer rank empty lists.
// Size-1 axes are never reported.
std::optional<DimsMapping> mesh_axes_of(const Sharding& sharding, const DeviceMesh& mesh,
                                        int64_t rank = -1);

}  // namespace podsim::compiler
