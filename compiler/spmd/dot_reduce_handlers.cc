// Reduce and dot handlers (gspmd-algorithms.md 3.3 HandleReduce, 3.4 dot
// strategies: batch/non-contracting partitioned from the result's sharding;
// contracting partitioned -> local dot of partial sums + all-reduce).
#include <algorithm>

#include "compiler/sharding/sharding_util.h"
#include "compiler/spmd/spmd_handlers.h"

namespace podsim::compiler {
namespace {

bool contains(const std::vector<int64_t>& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// Dims of a rank-`rank` operand that are neither batch nor contracting.
std::vector<int64_t> free_dims(int64_t rank, const std::vector<int64_t>& batch, const std::vector<int64_t>& contracting) {
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < rank; ++d)
    if (!contains(batch, d) && !contains(contracting, d)) dims.push_back(d);
  return dims;
}

std::vector<int64_t> concat(std::vector<int64_t> a, const std::vector<int64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::vector<int64_t> iota_from(int64_t start, int64_t count) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < count; ++i) v.push_back(start + i);
  return v;
}

// Dot operand layout: result dims are [batch..., lhs free..., rhs free...].
struct DotLayout {
  std::vector<int64_t> batch[2], contracting[2], free[2];
  std::vector<int64_t> result_batch, result_free[2];
};

DotLayout dot_layout(const Instruction& dot, const std::vector<PartitionedValue>& operands) {
  DotLayout l;
  const DotDims& dims = dot.attrs.dot;
  l.batch[0] = dims.lhs_batch;
  l.batch[1] = dims.rhs_batch;
  l.contracting[0] = dims.lhs_contracting;
  l.contracting[1] = dims.rhs_contracting;
  for (int side = 0; side < 2; ++side)
    l.free[side] = free_dims(operands[static_cast<size_t>(side)].base_shape.rank(), l.batch[side], l.contracting[side]);
  const int64_t nb = static_cast<int64_t>(l.batch[0].size());
  l.result_batch = iota_from(0, nb);
  l.result_free[0] = iota_from(nb, static_cast<int64_t>(l.free[0].size()));
  l.result_free[1] = iota_from(nb + static_cast<int64_t>(l.free[0].size()), static_cast<int64_t>(l.free[1].size()));
  return l;
}

// Neither side's contracting dims are sharded (after choosing operand
// shardings from the result): each operand takes the result's tiling of its
// batch and free dims, so the local dot is exactly this device's result tile.
PartitionedValue dot_from_result(SpmdContext& context, const HandlerInput& in, const DotLayout& l) {
  std::vector<InstrId> locals;
  for (int side = 0; side < 2; ++side) {
    const PartitionedValue& operand = in.operands[static_cast<size_t>(side)];
    DimCorrespondence map{concat(l.result_batch, l.result_free[side]), concat(l.batch[side], l.free[side]),
                          operand.base_shape.rank()};
    locals.push_back(reshard(context, operand, propagate_along_dims_and_replicate_others(in.target, map)).id);
  }
  return PartitionedValue{clone_with_operands(context, in.original, std::move(locals)), in.original.shape, in.target};
}

// Side `s` is sharded on contracting dims: the other side is resharded to
// match on the contracting and batch dims, padding of uneven contracting
// dims is zeroed on both sides, the local dot yields partial sums that an
// all-reduce over the contracting tile groups completes.
PartitionedValue dot_contracting(SpmdContext& context, const HandlerInput& in, const DotLayout& l, int s) {
  const int o = 1 - s;
  const PartitionedValue& sharded = in.operands[static_cast<size_t>(s)];
  const PartitionedValue& other = in.operands[static_cast<size_t>(o)];
  DimCorrespondence to_other{concat(l.contracting[s], l.batch[s]), concat(l.contracting[o], l.batch[o]),
                             other.base_shape.rank()};
  PartitionedValue other_local = reshard(context, other, propagate_along_dims_and_replicate_others(sharded.sharding, to_other));
  const DType dtype = sharded.base_shape.dtype();
  PartitionedValue sharded_masked = sharded;
  sharded_masked.id = context.mask_padding(sharded, l.contracting[s], context.zero(dtype));
  PartitionedValue other_masked = other_local;
  other_masked.id = context.mask_padding(other_local, l.contracting[o], context.zero(other.base_shape.dtype()));
  std::vector<InstrId> locals(2);
  locals[static_cast<size_t>(s)] = sharded_masked.id;
  locals[static_cast<size_t>(o)] = other_masked.id;
  InstrId partial = clone_with_operands(context, in.original, std::move(locals));

  std::vector<int64_t> contracting_tiled;
  for (int64_t d : l.contracting[s])
    if (tile_count(sharded.sharding, d) > 1) contracting_tiled.push_back(d);
  const DType result_type = in.original.shape.dtype();
  InstrId summed = context.builder().all_reduce(partial, context.groups_along_tile_dims(sharded.sharding, contracting_tiled),
                                                context.scalar_reducer(Opcode::kAdd, result_type));
  DimCorrespondence to_result{concat(l.batch[s], l.free[s]), concat(l.result_batch, l.result_free[s]),
                              in.original.shape.rank()};
  Sharding local = propagate_along_dims_and_replicate_others(sharded.sharding, to_result);
  return reshard(context, PartitionedValue{summed, in.original.shape, local}, in.target);
}

}  // namespace

PartitionedValue handle_dot(SpmdContext& context, const HandlerInput& in) {
  const DotLayout l = dot_layout(in.original, in.operands);
  for (int side = 0; side < 2; ++side) {
    const Sharding& s = in.operands[static_cast<size_t>(side)].sharding;
    for (int64_t d : l.contracting[side])
      if (tile_count(s, d) > 1) return dot_contracting(context, in, l, side);
  }
  return dot_from_result(context, in, l);
}

// Local reduce of the operand's shard (uneven reduced dims masked with the
// init value, assumed the reducer's identity as XLA does), then a combine
// over the devices holding other tiles of the reduced dims.
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
  if (!reduced_tiled.empty())
    local = context.builder().all_reduce(local, context.groups_along_tile_dims(operand.sharding, reduced_tiled),
                                         in.original.to_apply());
  if (local_sharding.is_tiled()) local_sharding = remove_shape_dims(local_sharding, reduced);
  return reshard(context, PartitionedValue{local, in.original.shape, local_sharding}, in.target);
}

}  // namespace podsim::compiler
