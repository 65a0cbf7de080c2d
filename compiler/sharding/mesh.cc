// DeviceMesh, mesh_split and its inverse.
//
// mesh_split: transpose the mesh device array so the axes appear in the order
// [axes of dim 0 ..., axes of dim 1 ..., unused axes in mesh order], then
// reshape to [tiles of dim 0, ..., product of unused axes]; the last dim is
// the replication group (last_tile_dim_replicate) when larger than 1.
#include "compiler/sharding/mesh.h"

#include <algorithm>
#include <functional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace podsim::compiler {
namespace {

std::string axis_list(const std::vector<MeshAxis>& axes) {
  std::vector<std::string> parts;
  for (const auto& a : axes) parts.push_back(fmt::format("{}={}", a.name, a.size));
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

}  // namespace

DeviceMesh::DeviceMesh(std::vector<MeshAxis> axes, std::optional<std::vector<int64_t>> devices,
                       const SourceLocation& where)
    : axes_(std::move(axes)) {
  std::set<std::string> names;
  for (const auto& axis : axes_) {
    if (axis.name.empty()) {
      throw UserError(where, "mesh axis with an empty name", "name every axis, e.g. x: 4");
    }
    if (!names.insert(axis.name).second) {
      throw UserError(where, fmt::format("mesh axis '{}' is listed twice", axis.name),
                      "give each mesh axis a distinct name");
    }
    if (axis.size < 1) {
      throw UserError(where, fmt::format("mesh axis '{}' has size {}", axis.name, axis.size),
                      "axis sizes must be at least 1");
    }
  }
  const auto sizes = axis_sizes();
  const int64_t n = product_of(sizes);
  if (!devices) {
    devices_ = TileAssignment::iota(sizes);
    return;
  }
  if (static_cast<int64_t>(devices->size()) != n) {
    throw UserError(where,
                    fmt::format("mesh {} has {} devices but the device list has {}",
                                axis_list(axes_), n, devices->size()),
                    "list every device of the mesh exactly once, row-major over the axes");
  }
  std::vector<bool> seen(static_cast<size_t>(n), false);
  for (int64_t d : *devices) {
    if (d < 0 || d >= n || seen[static_cast<size_t>(d)]) {
      throw UserError(where,
                      fmt::format("mesh device list: device {} is out of range or repeated", d),
                      fmt::format("the list must be a permutation of 0..{}", n - 1));
    }
    seen[static_cast<size_t>(d)] = true;
  }
  devices_ = TileAssignment::from_devices(sizes, std::move(*devices));
}

int64_t DeviceMesh::num_devices() const { return product_of(axis_sizes()); }

std::vector<int64_t> DeviceMesh::axis_sizes() const {
  std::vector<int64_t> sizes;
  for (const auto& a : axes_) sizes.push_back(a.size);
  return sizes;
}

std::optional<int64_t> DeviceMesh::axis_index(const std::string& name) const {
  for (size_t i = 0; i < axes_.size(); ++i) {
    if (axes_[i].name == name) return static_cast<int64_t>(i);
  }
  return std::nullopt;
}

Sharding mesh_split(int64_t rank, const DeviceMesh& mesh, const DimsMapping& dims_mapping,
                    const SourceLocation& where) {
  if (static_cast<int64_t>(dims_mapping.size()) != rank) {
    throw UserError(where,
                    fmt::format("dims mapping has {} entries but the tensor has rank {}",
                                dims_mapping.size(), rank),
                    "give one entry (an axis name or null) per tensor dim");
  }
  std::vector<int64_t> perm;
  std::vector<int64_t> tile_dims;
  std::vector<bool> used(mesh.axes().size(), false);
  for (const auto& axes : dims_mapping) {
    int64_t tiles = 1;
    for (const auto& name : axes) {
      const auto index = mesh.axis_index(name);
      if (!index) {
        throw UserError(where, fmt::format("unknown mesh axis '{}'", name),
                        fmt::format("the mesh axes are {}", axis_list(mesh.axes())));
      }
      if (used[static_cast<size_t>(*index)]) {
        throw UserError(where, fmt::format("mesh axis '{}' shards more than one dim", name),
                        "each mesh axis may split at most one tensor dim");
      }
      used[static_cast<size_t>(*index)] = true;
      perm.push_back(*index);
      tiles *= mesh.axes()[static_cast<size_t>(*index)].size;
    }
    tile_dims.push_back(tiles);
  }
  int64_t replication = 1;
  for (size_t i = 0; i < used.size(); ++i) {
    if (used[i]) continue;
    perm.push_back(static_cast<int64_t>(i));
    replication *= mesh.axes()[i].size;
  }
  tile_dims.push_back(replication);
  return Sharding::partial_tile(mesh.device_array().transpose(perm).reshape(tile_dims));
}

Sharding mesh_split(int64_t rank, const DeviceMesh& mesh,
                    const std::vector<std::optional<std::string>>& dims_mapping,
                    const SourceLocation& where) {
  DimsMapping general;
  for (const auto& axis : dims_mapping) {
    general.push_back(axis ? std::vector<std::string>{*axis} : std::vector<std::string>{});
  }
  return mesh_split(rank, mesh, general, where);
}

std::optional<DimsMapping> mesh_axes_of(const Sharding& sharding, const DeviceMesh& mesh,
                                        int64_t rank) {
  const Sharding target = sharding.without_group_and_metadata();
  if (target.is_replicated()) {
    if (rank < 0) return std::nullopt;
    return DimsMapping(static_cast<size_t>(rank));
  }
  if (!target.is_tiled() || target.has_manual_subgroup()) return std::nullopt;
  if (target.total_num_tiles() != mesh.num_devices()) return std::nullopt;
  const auto tiles = target.data_tile_dims();
  if (rank >= 0 && rank != static_cast<int64_t>(tiles.size())) return std::nullopt;
  // Backtracking: for each dim choose an ordered list of unused axes (size > 1)
  // whose sizes multiply to the dim's tile count; check each full candidate.
  DimsMapping mapping(tiles.size());
  std::vector<bool> used(mesh.axes().size(), false);
  std::function<bool(size_t, int64_t)> search = [&](size_t dim, int64_t remaining) -> bool {
    if (dim == tiles.size()) {
      return mesh_split(static_cast<int64_t>(tiles.size()), mesh, mapping) == target;
    }
    if (remaining == 1) return search(dim + 1, dim + 1 < tiles.size() ? tiles[dim + 1] : 1);
    for (size_t a = 0; a < mesh.axes().size(); ++a) {
      const int64_t size = mesh.axes()[a].size;
      if (used[a] || size == 1 || remaining % size != 0) continue;
      used[a] = true;
      mapping[dim].push_back(mesh.axes()[a].name);
      if (search(dim, remaining / size)) return true;
      mapping[dim].pop_back();
      used[a] = false;
    }
    return false;
  };
  if (!search(0, tiles.empty() ? 1 : tiles[0])) return std::nullopt;
  return mapping;
}

}  // namespace podsim::compiler
