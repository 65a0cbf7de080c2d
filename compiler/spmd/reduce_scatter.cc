// reduce_scatter_partial (docs/reference/gspmd.md#dot-strategies: "contracting (all-reduce
// or reduce-scatter)"): all-reduce + dynamic-slice of dim e equals a
// reduce-scatter along e when device k of every reduction group is the one
// holding tile k of e under the target, and nothing else changes.
#include <utility>

#include "compiler/spmd/dot_strategies.h"
#include "compiler/spmd/reshard.h"

namespace podsim::compiler {

PartitionedValue reduce_scatter_partial(SpmdContext& context, const PartialValue& partial,
                                        const Sharding& target) {
  auto& b = context.builder();
  const int64_t rank = partial.base_shape.rank();
  if (const int64_t e =
          reduce_scatter_dim(partial.sharding, target, partial.groups, rank, context.num_devices());
      e >= 0) {
    const int64_t g = tile_count(target, e);
    const int64_t full = partial.base_shape.dim(static_cast<int>(e));
    const int64_t padded = g * ((full + g - 1) / g);
    InstrId x = partial.id;
    if (padded != full) {
      std::vector<PadDim> padding(static_cast<size_t>(rank));
      padding[static_cast<size_t>(e)].high = padded - full;
      x = b.pad(x, context.zero(partial.base_shape.dtype()), std::move(padding));
    }
    InstrId scattered = b.reduce_scatter(x, e, partial.groups, partial.reducer);
    return PartitionedValue{scattered, partial.base_shape, target};
  }
  InstrId summed = b.all_reduce(partial.id, partial.groups, partial.reducer);
  return reshard(context, PartitionedValue{summed, partial.base_shape, partial.sharding}, target);
}

}  // namespace podsim::compiler
