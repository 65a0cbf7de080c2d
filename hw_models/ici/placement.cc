// Logical mesh -> physical device placement (see placement.h for the orders).
#include "hw_models/ici/placement.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <functional>
#include <numeric>
#include <utility>

#include "common/error.h"

namespace podsim::hw {
namespace {

int64_t product(const std::vector<int64_t>& dims) {
  return std::accumulate(dims.begin(), dims.end(), int64_t{1}, std::multiplies<>());
}

// Core of (row, inner index) on [X, Y, C] for the ring-preserving order.
CoreId ring_core(const Slice& slice, int64_t outer, int64_t inner) {
  const int64_t rows = slice.chip_dims[0], cols = slice.chip_dims[1],
                per_chip = slice.devices_per_chip;
  const int64_t x = folded_ring_position(outer, rows);
  int64_t y = 0, device = 0;
  if (per_chip == 1) {
    y = folded_ring_position(inner, cols);
  } else {
    // Snake: device 0 goes along y, device 1 comes back, ...
    device = inner / cols;
    const int64_t along = inner % cols;
    y = device % 2 == 0 ? along : cols - 1 - along;
  }
  return (x * cols + y) * per_chip + device;
}

}  // namespace

int64_t folded_ring_position(int64_t index, int64_t size) {
  const int64_t ascending = (size + 1) / 2;  // positions 0, 2, 4, ...
  if (index < ascending) return 2 * index;
  return 2 * (size - 1 - index) + 1;
}

const yaml::NameTable<PlacementOrder>& placement_orders() {
  static const yaml::NameTable<PlacementOrder> table{
      {PlacementOrder::kRowMajor, "row_major"},
      {PlacementOrder::kColumnMajor, "column_major"},
      {PlacementOrder::kExplicit, "explicit"},
      {PlacementOrder::kRingPreserving, "ring_preserving"}};
  return table;
}

PlacementOrder placement_order_from_name(const std::string& name) {
  if (const std::optional<PlacementOrder> order = placement_orders().find(name)) return *order;
  throw UserError(fmt::format("unknown mesh order '{}'", name),
                  "valid orders: row_major, column_major, explicit, ring_preserving");
}

CoreId Placement::core_at(const std::vector<int64_t>& coords) const {
  int64_t device = 0;
  for (size_t d = 0; d < mesh_shape.size(); ++d) device = device * mesh_shape[d] + coords[d];
  return core(device);
}

Placement place_mesh(const Slice& slice, const PlacementQuery& query) {
  const int64_t devices = product(query.mesh_shape);
  if (devices != slice.num_devices())
    throw UserError(fmt::format("mesh [{}] has {} devices but the physical slice {} has {}",
                                fmt::join(query.mesh_shape, ", "), devices, slice.to_string(),
                                slice.num_devices()),
                    "the mesh's product must equal the physical shape's product");
  Placement placement{query.mesh_shape, std::vector<CoreId>(static_cast<size_t>(devices))};
  switch (query.order) {
    case PlacementOrder::kRowMajor:
      std::iota(placement.core_of_device.begin(), placement.core_of_device.end(), CoreId{0});
      break;
    case PlacementOrder::kColumnMajor: {
      const auto& shape = query.mesh_shape;
      for (int64_t device = 0; device < devices; ++device) {
        // Row-major coords of `device`, re-linearised with dim 0 fastest.
        int64_t rest = device, core = 0, stride = 1;
        std::vector<int64_t> coords(shape.size());
        for (size_t d = shape.size(); d-- > 0;) coords[d] = rest % shape[d], rest /= shape[d];
        for (size_t d = 0; d < shape.size(); ++d) core += coords[d] * stride, stride *= shape[d];
        placement.core_of_device[static_cast<size_t>(device)] = core;
      }
      break;
    }
    case PlacementOrder::kExplicit: {
      if (static_cast<int64_t>(query.explicit_devices.size()) != devices)
        throw UserError(fmt::format("explicit device list has {} entries; the mesh has {} devices",
                                    query.explicit_devices.size(), devices));
      std::vector<bool> seen(static_cast<size_t>(devices), false);
      for (int64_t core : query.explicit_devices) {
        if (core < 0 || core >= devices || seen[static_cast<size_t>(core)])
          throw UserError(fmt::format(
              "explicit device list must be a permutation of 0..{}; bad or repeated id {}",
              devices - 1, core));
        seen[static_cast<size_t>(core)] = true;
      }
      placement.core_of_device = query.explicit_devices;
      break;
    }
    case PlacementOrder::kRingPreserving: {
      const auto& shape = query.mesh_shape;
      if (shape.size() != 2 || slice.chip_dims.size() != 2)
        throw UserError("ring_preserving placement needs a 2-D mesh on a 2-D slice",
                        "use row_major or an explicit device list");
      const int64_t x = slice.chip_dims[0], inner = slice.chip_dims[1] * slice.devices_per_chip;
      const bool straight = shape[0] == x && shape[1] == inner;
      const bool transposed = shape[0] == inner && shape[1] == x;
      if (!straight && !transposed)
        throw UserError(fmt::format(
            "ring_preserving placement of mesh [{}] needs [{}, {}] or [{}, {}] on slice {}",
            fmt::join(shape, ", "), x, inner, inner, x, slice.to_string()));
      for (int64_t a = 0; a < shape[0]; ++a)
        for (int64_t b = 0; b < shape[1]; ++b)
          placement.core_of_device[static_cast<size_t>(a * shape[1] + b)] =
              straight ? ring_core(slice, a, b) : ring_core(slice, b, a);
      break;
    }
  }
  return placement;
}

AxisRingLoad axis_ring_load(const Topology& topology, const Placement& placement, size_t axis) {
  const std::vector<int64_t>& shape = placement.mesh_shape;
  AxisRingLoad out;
  if (axis >= shape.size() || shape[axis] < 2) return out;
  int64_t stride = 1;  // row-major device id stride of the axis
  for (size_t d = axis + 1; d < shape.size(); ++d) stride *= shape[d];
  const int64_t size = shape[axis];
  std::vector<int64_t> load(static_cast<size_t>(topology.num_links()), 0);
  std::vector<LinkId> path;
  const int64_t devices = product(shape);
  for (int64_t device = 0; device < devices; ++device) {
    const int64_t index = (device / stride) % size;
    const int64_t next = device + ((index + 1) % size - index) * stride;
    path.clear();
    topology.append_route(placement.core(device), placement.core(next), path);
    int64_t hops = 0;
    for (LinkId id : path) {
      if (topology.link(id).kind != LinkKind::kIci) continue;
      ++hops;
      out.max_link_load = std::max(out.max_link_load, ++load[static_cast<size_t>(id)]);
    }
    out.max_hops = std::max(out.max_hops, hops);
  }
  return out;
}

namespace {

// (most transfers on one link, sum of the axes' longest transfers) over the
// axes of more than 2 devices: the rank of a placement, lower is better.
std::pair<int64_t, int64_t> placement_cost(const Topology& topology, const Placement& placement) {
  std::pair<int64_t, int64_t> cost{0, 0};
  for (size_t axis = 0; axis < placement.mesh_shape.size(); ++axis) {
    if (placement.mesh_shape[axis] <= 2) continue;
    const AxisRingLoad ring = axis_ring_load(topology, placement, axis);
    cost.first = std::max(cost.first, ring.max_link_load);
    cost.second += ring.max_hops;
  }
  return cost;
}

// "--set 'mesh.physical=[...]' --set mesh.order=..." for the reordering of
// the chip dims (and their wraparound) that fits the pod and, row- or
// column-major, has the lowest placement_cost, provided it loads no link
// more than twice; "" when none does.
std::string better_placement(const Topology& topology, const std::vector<int64_t>& mesh_shape,
                             const std::vector<int64_t>& pod_dims) {
  const Slice& slice = topology.slice();
  std::vector<size_t> perm(slice.chip_dims.size());
  std::iota(perm.begin(), perm.end(), size_t{0});
  std::string best;
  std::pair<int64_t, int64_t> best_cost{3, 0};  // must beat a load of 2
  do {
    Slice candidate{{}, {}, slice.devices_per_chip};
    bool fits = pod_dims.size() == perm.size();
    for (size_t d = 0; d < perm.size(); ++d) {
      candidate.chip_dims.push_back(slice.chip_dims[perm[d]]);
      candidate.wraparound.push_back(slice.wraparound[perm[d]]);
      if (fits && candidate.chip_dims[d] > pod_dims[d]) fits = false;
    }
    if (!fits) continue;
    const Topology t(candidate, topology.params());
    for (PlacementOrder order : {PlacementOrder::kRowMajor, PlacementOrder::kColumnMajor}) {
      const std::pair<int64_t, int64_t> cost =
          placement_cost(t, place_mesh(candidate, PlacementQuery{mesh_shape, order, {}}));
      if (cost >= best_cost) continue;
      best_cost = cost;
      best = fmt::format("--set 'mesh.physical=[{}]' --set mesh.order={}",
                         fmt::join(candidate.physical_shape(), ","),
                         order == PlacementOrder::kRowMajor ? "row_major" : "column_major");
    }
  } while (std::next_permutation(perm.begin(), perm.end()));
  return best;
}

}  // namespace

std::vector<std::string> placement_notes(const Topology& topology, const Placement& placement,
                                         const std::vector<std::string>& axis_names,
                                         const std::string& order,
                                         const std::vector<int64_t>& pod_dims) {
  std::vector<std::string> notes;
  for (size_t axis = 0; axis < placement.mesh_shape.size(); ++axis) {
    if (placement.mesh_shape[axis] <= 2) continue;
    const AxisRingLoad ring = axis_ring_load(topology, placement, axis);
    if (ring.max_link_load <= 2) continue;
    const std::string name = axis < axis_names.size() ? axis_names[axis] : fmt::format("{}", axis);
    notes.push_back(
        fmt::format("mesh axis '{}' ({} devices) is not a ring of neighbouring chips under "
                    "placement {} on the {}: a shift "
                    "along it (a windowed-einsum step, a ring collective) puts up to {} transfers "
                    "on one ICI link and spans "
                    "up to {} hops, so it runs at 1/{} of the link rate",
                    name, placement.mesh_shape[axis], order, topology.slice().to_string(),
                    ring.max_link_load, ring.max_hops, ring.max_link_load));
  }
  if (notes.empty()) return notes;
  const std::string better = better_placement(topology, placement.mesh_shape, pod_dims);
  notes.back() += better.empty()
                      ? "; no reordering of the slice's dims (row- or column-major) avoids it"
                      : fmt::format("; {} loads no link more than twice", better);
  return notes;
}

}  // namespace podsim::hw
