// Weight-update sharding (see weight_update_sharding.h).
#include "compiler/training/weight_update_sharding.h"

#include <algorithm>

#include "compiler/sharding/sharding_util.h"

namespace podsim::compiler {

std::optional<Sharding> weight_update_sharding(const Sharding& weight,
                                               std::span<const int64_t> dims,
                                               const DeviceMesh& mesh) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  std::optional<DimsMapping> mapping = mesh_axes_of(weight, mesh, rank);
  if (!mapping) return std::nullopt;
  std::vector<int64_t> tiles(dims.size(), 1);
  std::vector<bool> used(mesh.axes().size(), false);
  for (size_t d = 0; d < mapping->size(); ++d)
    for (const std::string& axis : (*mapping)[d]) {
      size_t a = static_cast<size_t>(*mesh.axis_index(axis));
      used[a] = true;
      tiles[d] *= mesh.axes()[a].size;
    }
  for (size_t a = 0; a < mesh.axes().size(); ++a) {
    const MeshAxis& axis = mesh.axes()[a];
    if (used[a] || axis.size == 1) continue;
    int64_t best = -1;
    for (int64_t d = 0; d < rank; ++d) {
      size_t k = static_cast<size_t>(d);
      if (dims[k] % (tiles[k] * axis.size) != 0) continue;
      if (best < 0 ||
          dims[k] / tiles[k] > dims[static_cast<size_t>(best)] / tiles[static_cast<size_t>(best)])
        best = d;
    }
    if (best < 0) continue;
    (*mapping)[static_cast<size_t>(best)].push_back(axis.name);
    tiles[static_cast<size_t>(best)] *= axis.size;
  }
  return mesh_split(rank, mesh, *mapping);
}

Sharding sharding_without_dim(const Sharding& sharding, int64_t removed) {
  if (!sharding.is_tiled()) return sharding;
  std::vector<int64_t> dim{removed};
  Sharding replicated = partially_replicate_on_dims(sharding, dim);
  if (!replicated.is_tiled()) return replicated;
  return remove_shape_dims(replicated, dim);
}

}  // namespace podsim::compiler
