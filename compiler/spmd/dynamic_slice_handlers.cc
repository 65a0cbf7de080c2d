// dynamic-slice and dynamic-update-slice (docs/reference/gspmd.md#per-op-partitioning).
//   dynamic-slice: dims that are sliced (size < D) are made whole (all-gather
//     along them if the operand tiles them), the slice is taken locally with
//     the replicated start indices, and the result is dynamic-sliced to the
//     target tiling; unsliced dims keep their tiling and start at 0.
//   dynamic-update-slice: when the target tiles no updated dim, the update
//     takes the target's tiling and the DUS is local. Otherwise each device
//     keeps its operand tile and overwrites the positions the update covers:
//     the update (whole along the updated dims) is padded by the shard extent
//     on both sides and dynamic-sliced at s + offset - start, then selected
//     where offset + q lies in [start, start + u) (start clamped to [0, D-u]
//     as XLA does).
#include <algorithm>

#include "compiler/sharding/sharding_util.h"
#include "compiler/spmd/spmd_handlers.h"

namespace podsim::compiler {
namespace {

InstrId as_s32(SpmdContext& context, InstrId scalar) {
  auto& b = context.builder();
  return b.shape(scalar).dtype() == DType::kS32 ? scalar : b.convert(scalar, DType::kS32);
}

}  // namespace

PartitionedValue handle_dynamic_slice(SpmdContext& context, const HandlerInput& in) {
  const PartitionedValue& operand = in.operands[0];
  const auto& sizes = in.original.attrs.dynamic_slice_sizes;
  const int64_t rank = operand.base_shape.rank();
  std::vector<int64_t> sliced;
  for (int64_t d = 0; d < rank; ++d)
    if (sizes[static_cast<size_t>(d)] != operand.base_shape.dim(static_cast<int>(d)))
      sliced.push_back(d);
  const Sharding layout = partially_replicate_on_dims(in.target, sliced);
  PartitionedValue x = reshard(context, operand, layout);
  const Shape local = context.local_shape(x.id);
  std::vector<InstrId> starts;
  std::vector<int64_t> local_sizes;
  for (int64_t d = 0; d < rank; ++d) {
    const bool is_sliced = std::find(sliced.begin(), sliced.end(), d) != sliced.end();
    starts.push_back(is_sliced
                         ? as_s32(context, reshard(context, in.operands[static_cast<size_t>(d + 1)],
                                                   Sharding::replicated())
                                               .id)
                         : context.zero(DType::kS32));
    local_sizes.push_back(is_sliced ? sizes[static_cast<size_t>(d)]
                                    : local.dim(static_cast<int>(d)));
  }
  InstrId result = context.builder().dynamic_slice(x.id, std::move(starts), std::move(local_sizes));
  return reshard(context, PartitionedValue{result, in.original.shape, layout}, in.target);
}

PartitionedValue handle_dynamic_update_slice(SpmdContext& context, const HandlerInput& in) {
  auto& b = context.builder();
  const PartitionedValue& operand = in.operands[0];
  const PartitionedValue& update = in.operands[1];
  const Shape& base = operand.base_shape;
  const int64_t rank = base.rank();
  std::vector<int64_t> updated, updated_tiled;
  for (int64_t d = 0; d < rank; ++d) {
    if (update.base_shape.dim(static_cast<int>(d)) == base.dim(static_cast<int>(d))) continue;
    updated.push_back(d);
    if (tile_count(in.target, d) > 1) updated_tiled.push_back(d);
  }
  auto is_updated = [&](int64_t d) {
    return std::find(updated.begin(), updated.end(), d) != updated.end();
  };
  // Start indices clamped to [0, D - u] (XLA semantics), s32.
  std::vector<InstrId> clamped(static_cast<size_t>(rank), kNoId);
  for (int64_t d : updated) {
    InstrId index = as_s32(
        context,
        reshard(context, in.operands[static_cast<size_t>(d + 2)], Sharding::replicated()).id);
    const double max_start = static_cast<double>(base.dim(static_cast<int>(d)) -
                                                 update.base_shape.dim(static_cast<int>(d)));
    clamped[static_cast<size_t>(d)] =
        b.clamp(context.zero(DType::kS32), index, b.scalar_constant(DType::kS32, max_start));
  }
  PartitionedValue x = reshard(context, operand, in.target);
  if (updated_tiled.empty()) {
    PartitionedValue u = reshard(context, update, in.target);
    std::vector<InstrId> starts;
    for (int64_t d = 0; d < rank; ++d)
      starts.push_back(is_updated(d) ? clamped[static_cast<size_t>(d)] : context.zero(DType::kS32));
    return PartitionedValue{b.dynamic_update_slice(x.id, u.id, std::move(starts)), base, in.target};
  }
  PartitionedValue u = reshard(context, update, partially_replicate_on_dims(in.target, updated));
  const Shape local = context.local_shape(x.id);
  std::vector<PadDim> padding(static_cast<size_t>(rank));
  for (int64_t d : updated)
    padding[static_cast<size_t>(d)] =
        PadDim{local.dim(static_cast<int>(d)), local.dim(static_cast<int>(d)), 0};
  InstrId padded = b.pad(u.id, context.zero(base.dtype()), std::move(padding));
  std::vector<InstrId> starts;
  InstrId inside = kNoId;
  for (int64_t d = 0; d < rank; ++d) {
    if (!is_updated(d)) {
      starts.push_back(context.zero(DType::kS32));
      continue;
    }
    const int64_t s = local.dim(static_cast<int>(d));
    InstrId offset = context.partition_offset(in.target, base.dims(), d);
    InstrId shifted =
        b.binary(Opcode::kAdd, b.scalar_constant(DType::kS32, static_cast<double>(s)), offset);
    starts.push_back(b.binary(Opcode::kSubtract, shifted, clamped[static_cast<size_t>(d)]));
    // offset + q in [start, start + u)
    InstrId position = b.binary(Opcode::kAdd, b.iota(Shape(DType::kS32, local.dims()), d),
                                b.broadcast(offset, local.dims(), {}));
    InstrId lo = b.broadcast(clamped[static_cast<size_t>(d)], local.dims(), {});
    InstrId hi = b.broadcast(
        b.binary(Opcode::kAdd, clamped[static_cast<size_t>(d)],
                 b.scalar_constant(
                     DType::kS32, static_cast<double>(update.base_shape.dim(static_cast<int>(d))))),
        local.dims(), {});
    InstrId in_dim = b.binary(Opcode::kAnd, b.compare(position, lo, ComparisonDirection::kGe),
                              b.compare(position, hi, ComparisonDirection::kLt));
    inside = inside == kNoId ? in_dim : b.binary(Opcode::kAnd, inside, in_dim);
  }
  InstrId window = b.dynamic_slice(padded, std::move(starts), local.dims());
  return PartitionedValue{b.select(inside, window, x.id), base, in.target};
}

}  // namespace podsim::compiler
