// Reduce handler (docs/reference/gspmd.md#per-op-partitioning HandleReduce): local reduce of the
// operand's shard (uneven reduced dims masked with the init value, assumed
// the reducer's identity as XLA does), then an all-reduce (or, when the
// target splits the result over the same devices, a reduce-scatter) over
// the devices holding other tiles of the reduced dims.
#include "compiler/sharding/sharding_util.h"
#include "compiler/spmd/reshard.h"
#include "compiler/spmd/spmd_handlers.h"

namespace podsim::compiler {

PartitionedValue handle_reduce(SpmdContext& context, const HandlerInput& in) {
  if (in.operands.size() != 2 || in.original.shape.is_tuple()) return handle_default(context, in);
  const PartitionedValue& operand = in.operands[0];
  const PartitionedValue init = reshard(context, in.operands[1], Sharding::replicated());
  const auto& reduced = in.original.attrs.dimensions;
  std::vector<int64_t> reduced_tiled;
  for (int64_t d : reduced)
    if (tile_count(operand.sharding, d) > 1) reduced_tiled.push_back(d);
  PartitionedValue masked = operand;
  masked.id = context.mask_padding(operand, reduced_tiled, init.id);
  InstrId local = clone_with_operands(context, in.original, {masked.id, init.id});
  Sharding local_sharding = partially_replicate_on_dims(operand.sharding, reduced_tiled);
  if (local_sharding.is_tiled()) local_sharding = remove_shape_dims(local_sharding, reduced);
  if (reduced_tiled.empty())
    return reshard(context, PartitionedValue{local, in.original.shape, local_sharding}, in.target);
  // Partial sums over the devices holding other tiles of the reduced dims:
  // one reduce-scatter when the target splits a result dim over exactly
  // those devices (a weight-update-sharded vector gradient), else an
  // all-reduce and a reshard (reduce_scatter_partial decides).
  const PartialValue partial{local, in.original.shape, local_sharding,
                             context.groups_along_tile_dims(operand.sharding, reduced_tiled),
                             in.original.to_apply()};
  return reduce_scatter_partial(context, partial, in.target);
}

}  // namespace podsim::compiler
