// iota and uniform constants (docs/reference/gspmd.md#per-op-partitioning), built at shard size
// so no device materialises the whole value:
//   iota: an iota of the shard shape; along a tiled iota dim plus the tile's
//     offset (tile index times the padded shard extent). Positions in shard
//     padding get values >= D, which is padding content.
//   constant whose elements are all equal: a scalar broadcast to the shard
//     shape (other constants: whole value, then sliced by the caller).
#include <optional>

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

std::optional<PartitionedValue> handle_uniform_constant(SpmdContext& context,
                                                        const HandlerInput& in) {
  const Shape& shape = in.original.shape;
  const auto& literal = in.original.attrs.literal;
  if (!shape.is_array() || shape.rank() == 0 || !literal || literal->values().empty())
    return std::nullopt;
  const std::vector<double>& values = literal->values();
  for (double v : values)
    if (!(v == values[0]) && !(v != v && values[0] != values[0]))
      return std::nullopt;  // NaNs count as equal
  auto& b = context.builder();
  InstrId scalar = b.scalar_constant(shape.dtype(), values[0]);
  InstrId result = b.broadcast(scalar, shard_shape(in.target, shape.dims()), {});
  return PartitionedValue{result, shape, in.target};
}

}  // namespace podsim::compiler
