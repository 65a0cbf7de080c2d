// Assembly of a System from a config and a mesh layout.
#include "hw_models/system.h"

#include <functional>
#include <numeric>

namespace podsim::hw {
namespace {

Slice choose_slice(const HardwareConfig& config, const MeshLayout& layout) {
  if (!layout.physical.empty()) return slice_from_physical(config, layout.physical);
  const int64_t devices = std::accumulate(layout.mesh_shape.begin(), layout.mesh_shape.end(),
                                          int64_t{1}, std::multiplies<>());
  return default_slice(config, devices);
}

}  // namespace

System::System(HardwareConfig config, const MeshLayout& layout)
    : config_(std::move(config)),
      core_(make_core_model(config_)),
      topology_(choose_slice(config_, layout), link_params(config_)),
      placement_(place_mesh(topology_.slice(), PlacementQuery{layout.mesh_shape, layout.order,
                                                              layout.explicit_devices})) {}

CollectivePlan System::plan(CollectiveQuery query) const {
  if (query.algorithm == CollectiveAlgorithm::kAuto)
    query.algorithm = config_.ici.collective_algorithm;
  if (query.chunks == 0) query.chunks = config_.ici.collective_chunks;
  return plan_collective(topology_, query);
}

}  // namespace podsim::hw
