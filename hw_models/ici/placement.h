// Placement of a logical device mesh onto the physical devices of a slice: row_major,
// column_major (first mesh dim fastest), explicit (a user permutation of the cores) or
// ring_preserving (a 2-D mesh [A, B] on a 2-D slice [X, Y, C] with A = X, B = Y*C or the
// transpose, so every mesh axis's ring closes without wraparound links; Lingvo GetNonPod2dMesh,
// re-derived: docs/reference/measurements.md#placement-on-the-torus).
// The walks in full: docs/collectives.md#mesh-placement
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/yaml_reader.h"
#include "hw_models/ici/topology.h"

namespace podsim::hw {

enum class PlacementOrder { kRowMajor, kColumnMajor, kExplicit, kRingPreserving };

// "row_major", "column_major", "explicit", "ring_preserving"; UserError otherwise.
PlacementOrder placement_order_from_name(const std::string& name);
// The orders by name (the one table: workloads' mesh.order reads it).
const yaml::NameTable<PlacementOrder>& placement_orders();

struct PlacementQuery {
  std::vector<int64_t> mesh_shape;  // logical mesh; product = slice devices
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

// How one mesh axis's rings sit on the ICI: every device sends to the next
// device along the axis (the last to the first), all rings of the axis at
// once, as a windowed-einsum step or a ring collective does. max_link_load
// is the most transfers any directed ICI link carries (1 when every ring runs
// over neighbouring chips), max_hops the longest single transfer.
struct AxisRingLoad {
  int64_t max_link_load = 0;
  int64_t max_hops = 0;
};
AxisRingLoad axis_ring_load(const Topology& topology, const Placement& placement, size_t axis);

// A sentence per mesh axis of more than 2 devices whose rings load some ICI
// link with more than 2 transfers at once (its shifts run at 1/load of the
// link rate), naming the axis, the placement and the slice, and a reordering
// of the slice's chip dims with row_major or column_major order under which
// no axis does, when one exists and fits `pod_dims`; empty when no axis is
// loaded so.
std::vector<std::string> placement_notes(const Topology& topology, const Placement& placement,
                                         const std::vector<std::string>& axis_names,
                                         const std::string& order,
                                         const std::vector<int64_t>& pod_dims);

// Position along a ring of `size` that folds onto a line with no wraparound:
// 0, 2, 4, ..., then back down the odd positions. Consecutive entries are at
// most 2 apart, and the last is adjacent to the first.
int64_t folded_ring_position(int64_t index, int64_t size);

}  // namespace podsim::hw
