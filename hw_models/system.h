// One simulated machine: the hardware config, its core model, the slice the
// workload's mesh is laid onto, that slice's ICI topology and the mesh
// placement. What sim/ holds per run (docs/design.md data flow: hw::System).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "hw_models/config.h"
#include "hw_models/core/core_model.h"
#include "hw_models/ici/collectives.h"
#include "hw_models/ici/placement.h"
#include "hw_models/ici/topology.h"

namespace podsim::hw {

// The workload's `mesh:` section in hardware terms.
struct MeshLayout {
  std::vector<int64_t> mesh_shape;  // logical mesh axes, in order
  std::vector<int64_t> physical;    // [chip dims..., devices per chip]; empty = default slice
  PlacementOrder order = PlacementOrder::kRowMajor;
  std::vector<int64_t> explicit_devices;  // PlacementOrder::kExplicit only
  // Slices joined by the data-centre network, each holding mesh_shape's devices laid out as
  // above; device id = slice * devices per slice + id in slice (JAX's hybrid mesh).
  int64_t slices = 1;
};

// Chips that differ from the machine's config (HardwareConfig::chip_overrides resolved on the
// slices the mesh uses): chips whose overrides end at the same values form one variant.
struct ChipVariant {
  HardwareConfig config;                               // the machine's, with `values` applied
  std::vector<std::pair<ChipKey, double>> values;  // per-chip key -> value, in key order
  std::vector<int64_t> chips;                          // physical chip ids (slice-major), ascending
  std::vector<int64_t> devices;  // program devices on those chips (via the placement), ascending
};

class System {
 public:
  // UserError when the mesh does not fit the pod, the placement is invalid, or several slices
  // meet a preset without a DCN bandwidth.
  System(HardwareConfig config, const MeshLayout& layout);

  const HardwareConfig& config() const { return config_; }
  const CoreModel& core() const { return *core_; }
  const Slice& slice() const { return topology_.slice(); }  // one slice
  int64_t slices() const { return topology_.num_slices(); }
  const Topology& topology() const { return topology_; }
  // Every device of every slice (core_of_device spans them all; mesh_shape is one slice's).
  const Placement& placement() const { return placement_; }

  // Per-chip overrides, resolved (empty: every chip is config()). UserError (at the override) when
  // a chip id is beyond the slices.
  const std::vector<ChipVariant>& chip_variants() const { return chip_variants_; }
  // "chip 17 (devices 34, 35) core.clock_hz 1.05e9 of 1.4e9; chips 0-3 (devices 0-7) ...", or "".
  std::string chip_variants_text() const;

  // plan_collective with the preset's ici.collective_algorithm standing in
  // for CollectiveAlgorithm::kAuto in the query, and its ici.collective_chunks
  // for chunks = 0.
  CollectivePlan plan(CollectiveQuery query) const;

 private:
  HardwareConfig config_;
  std::unique_ptr<CoreModel> core_;
  Topology topology_;
  Placement placement_;
  std::vector<ChipVariant> chip_variants_;
};

}  // namespace podsim::hw
