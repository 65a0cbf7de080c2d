// Assembly of a System from a config and a mesh layout.
#include "hw_models/system.h"

#include <fmt/format.h>
#include <functional>
#include <numeric>

#include "common/error.h"

namespace podsim::hw {
namespace {

Slice choose_slice(const HardwareConfig& config, const MeshLayout& layout) {
  if (!layout.physical.empty()) return slice_from_physical(config, layout.physical);
  const int64_t devices = std::accumulate(layout.mesh_shape.begin(), layout.mesh_shape.end(),
                                          int64_t{1}, std::multiplies<>());
  return default_slice(config, devices);
}

int64_t checked_slices(const HardwareConfig& config, const MeshLayout& layout) {
  if (layout.slices < 1)
    throw UserError(fmt::format("{} slices: a run needs at least one", layout.slices),
                    "give mesh.dcn axis sizes (or --slices) of at least 1");
  if (layout.slices > 1 && !(config.dcn.bandwidth_per_chip > 0))
    throw UserError(
        fmt::format("{} slices need the data-centre network, but {} gives dcn.bandwidth_per_chip "
                    "= {}",
                    layout.slices, config.name, config.dcn.bandwidth_per_chip),
        "set one: --set hardware.dcn.bandwidth_per_chip=6.25e9 (bytes/s per chip; "
        "docs/reference/hardware.md#data-centre-network)");
  return layout.slices;
}

// The slice's placement repeated in every slice (device id = slice x devices per slice + id).
Placement place_slices(const Topology& topology, const MeshLayout& layout) {
  Placement placement = place_mesh(
      topology.slice(), PlacementQuery{layout.mesh_shape, layout.order, layout.explicit_devices});
  const auto per_slice = static_cast<int64_t>(placement.core_of_device.size());
  for (int64_t s = 1; s < topology.num_slices(); ++s)
    for (int64_t d = 0; d < per_slice; ++d)
      placement.core_of_device.push_back(s * topology.num_devices() +
                                         placement.core_of_device[static_cast<size_t>(d)]);
  return placement;
}

}  // namespace

System::System(HardwareConfig config, const MeshLayout& layout)
    : config_(std::move(config)),
      core_(make_core_model(config_)),
      topology_(choose_slice(config_, layout), link_params(config_),
                checked_slices(config_, layout)),
      placement_(place_slices(topology_, layout)) {}

CollectivePlan System::plan(CollectiveQuery query) const {
  if (query.algorithm == CollectiveAlgorithm::kAuto)
    query.algorithm = config_.ici.collective_algorithm;
  if (query.chunks == 0) query.chunks = config_.ici.collective_chunks;
  return plan_collective(topology_, query);
}

}  // namespace podsim::hw
