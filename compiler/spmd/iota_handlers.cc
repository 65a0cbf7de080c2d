// iota (gspmd-algorithms.md 3.3): each device builds an iota of its shard
// shape; along a tiled iota dim it adds its tile's offset (tile index times
// the padded shard extent), so no device materialises the whole value.
// Positions in shard padding get values >= D, which is padding content.
#include "compiler/spmd/spmd_handlers.h"

namespace podsim::compiler {

PartitionedValue handle_iota(SpmdContext& context, const HandlerInput& in) {
  auto& b = context.builder();
  const Shape& shape = in.original.shape;
  const int64_t dim = in.original.attrs.iota_dimension;
  const Shape local(shape.dtype(), shard_shape(in.target, shape.dims()));
  InstrId result = b.iota(local, dim);
  if (tile_count(in.target, dim) > 1) {
    InstrId offset = context.partition_offset(in.target, shape.dims(), dim);
    if (shape.dtype() != DType::kS32) offset = b.convert(offset, shape.dtype());
    result = b.binary(Opcode::kAdd, result, b.broadcast(offset, local.dims(), {}));
  }
  return PartitionedValue{result, shape, in.target};
}

}  // namespace podsim::compiler
