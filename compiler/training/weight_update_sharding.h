// Weight-update sharding (GSPMD paper section 3.3; Xu et al. 2020,
// "Automatic cross-replica sharding of weight update"): the optimizer state
// and update of a weight are sharded like the weight and, in addition, over
// the mesh axes the weight is replicated on, so the data-parallel gradient
// sum becomes a reduce-scatter and the new weight an all-gather.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "compiler/sharding/mesh.h"
#include "compiler/sharding/sharding.h"

namespace podsim::compiler {

// The update sharding of a weight of `dims` sharded as `weight` on `mesh`:
// every mesh axis of size > 1 that the weight is replicated on is appended
// (minor-most) to the dim that keeps the largest per-device extent among
// those whose size stays divisible by its new tile count (ties: the lower
// dim); axes that divide no dim stay replicated. Axes are taken in mesh
// order. nullopt when `weight` is no mesh split of `mesh` (maximal, manual,
// other device orders): the caller then keeps the weight's sharding.
std::optional<Sharding> weight_update_sharding(const Sharding& weight,
                                               std::span<const int64_t> dims,
                                               const DeviceMesh& mesh);

// The sharding of a statistic over `dims` with dim `removed` reduced away
// (Adafactor row/column statistics): the tiling of `removed` becomes
// replication and the dim is dropped.
Sharding sharding_without_dim(const Sharding& sharding, int64_t removed);

}  // namespace podsim::compiler
