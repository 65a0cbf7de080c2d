// Placement of a logical device mesh onto the physical devices of a slice.
//   row_major       device d (row-major over the mesh) -> physical core d
//   column_major    mesh coords linearised with the FIRST mesh dim fastest -> core
//   explicit        a user list: device d -> list[d] (a permutation of the cores)
//   ring_preserving for a 2-D mesh [A, B] on a 2-D slice [X, Y, C] with A = X and
//                   B = Y*C (Lingvo GetNonPod2dMesh, re-derived;
//                   docs/reference/measurements.md#placement-on-the-torus):
//                   the inner mesh axis walks the chips of a row along y on
//                   device 0, comes back along y on device 1 (and so on for
//                   more devices per chip), so consecutive devices are one hop
//                   or one chip apart and the ring closes on-chip; the outer
//                   axis visits rows folded (0, 2, 4, ..., 5, 3, 1) so its ring
//                   closes without wraparound links. A = Y*C, B = X is the
//                   transposed case.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hw_models/ici/topology.h"

namespace podsim::hw {

enum class PlacementOrder { kRowMajor, kColumnMajor, kExplicit, kRingPreserving };

// "row_major", "column_major", "explicit", "ring_preserving"; UserError otherwise.
PlacementOrder placement_order_from_name(const std::string& name);

struct PlacementQuery {
  std::vector<int64_t> mesh_shape;       // logical mesh; product = slice devices
  PlacementOrder order = PlacementOrder::kRowMajor;
  std::vector<int64_t> explicit_devices;  // kExplicit only
};

struct Placement {
  std::vector<int64_t> mesh_shape;
  std::vector<CoreId> core_of_device;  // indexed by row-major logical device id

  CoreId core(int64_t device) const { return core_of_device[static_cast<size_t>(device)]; }
  CoreId core_at(const std::vector<int64_t>& mesh_coords) const;
};

Placement place_mesh(const Slice& slice, const PlacementQuery& query);

// Position along a ring of `size` that folds onto a line with no wraparound:
// 0, 2, 4, ..., then back down the odd positions. Consecutive entries are at
// most 2 apart, and the last is adjacent to the first.
int64_t folded_ring_position(int64_t index, int64_t size);

}  // namespace podsim::hw
