// Handlers for elementwise ops, broadcast, transpose and the default action
// (docs/reference/gspmd.md#per-op-partitioning: HandleElementwise, HandleBroadcast,
// HandleTranspose, DefaultAction).
#include "compiler/spmd/spmd_handlers.h"

#include <algorithm>

#include "compiler/sharding/sharding_util.h"

namespace podsim::compiler {

InstrId clone_with_operands(SpmdContext& context, const Instruction& original,
                            std::vector<InstrId> operands) {
  Instruction copy = original;
  copy.name.clear();
  copy.sharding.reset();
  copy.operands = std::move(operands);
  return context.builder().add_inferred(std::move(copy));
}

// Operands take the result's sharding; a scalar operand of a non-scalar op
// (clamp bounds) is used as is.
PartitionedValue handle_elementwise(SpmdContext& context, const HandlerInput& in) {
  std::vector<InstrId> operands;
  for (const PartitionedValue& operand : in.operands) {
    if (operand.base_shape.is_scalar() && !in.original.shape.is_scalar())
      operands.push_back(reshard(context, operand, Sharding::replicated()).id);
    else
      operands.push_back(reshard(context, operand, in.target).id);
  }
  // The result is the target's shard of the op's own shape (its element type
  // included: is-finite gives pred, real/imag the component type).
  return PartitionedValue{clone_with_shape(context, in.original, std::move(operands),
                                           partitioned_shape(in.original.shape, in.target)),
                          in.original.shape, in.target};
}

// The operand takes the result's tiling of the dims it maps to (replicated
// over the tiles of the new dims); the local broadcast is built directly at
// the result's shard shape, as XLA does: along a new dim every tile holds
// the same copies, so no full-size temporary and no slice are needed.
PartitionedValue handle_broadcast(SpmdContext& context, const HandlerInput& in) {
  const auto& mapped = in.original.attrs.dimensions;
  if (!std::is_sorted(mapped.begin(), mapped.end())) return handle_default(context, in);
  const auto& out_dims = in.original.shape.dims();
  std::vector<int64_t> new_dims;
  for (int64_t d = 0; d < static_cast<int64_t>(out_dims.size()); ++d)
    if (std::find(mapped.begin(), mapped.end(), d) == mapped.end()) new_dims.push_back(d);
  const Sharding intermediate = partially_replicate_on_dims(in.target, new_dims);
  const Sharding operand_sharding =
      intermediate.is_tiled() ? remove_shape_dims(intermediate, new_dims) : intermediate;
  PartitionedValue operand = reshard(context, in.operands[0], operand_sharding);
  InstrId local = context.builder().broadcast(operand.id, shard_shape(in.target, out_dims), mapped);
  return PartitionedValue{local, in.original.shape, in.target};
}

// Result dim i is operand dim perm[i], so the operand needs the target
// transposed by the inverse permutation.
PartitionedValue handle_transpose(SpmdContext& context, const HandlerInput& in) {
  const auto& perm = in.original.attrs.dimensions;
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  const Sharding operand_sharding = transpose_sharding(in.target, inverse);
  PartitionedValue operand = reshard(context, in.operands[0], operand_sharding);
  return PartitionedValue{clone_with_operands(context, in.original, {operand.id}),
                          in.original.shape, in.target};
}

namespace {

// Reshaping the local shard is exact when the reshape rule maps `from` (on
// source dims) to `to` (on target dims), every sharded dim on both sides
// divides evenly (no padding to move) and the shard element counts agree
// (a split that turned tiles into replication does not qualify).
bool local_reshape_is_exact(std::span<const int64_t> source_dims, const Sharding& from,
                            std::span<const int64_t> target_dims, const Sharding& to) {
  auto even = [](const Sharding& s, std::span<const int64_t> dims) {
    for (size_t d = 0; d < dims.size(); ++d)
      if (dims[d] % tile_count(s, static_cast<int64_t>(d)) != 0) return false;
    return true;
  };
  if (!even(from, source_dims) || !even(to, target_dims)) return false;
  return product_of(shard_shape(from, source_dims)) == product_of(shard_shape(to, target_dims));
}

}  // namespace

// Reshape: keep the operand's tiling if the reshape rule carries it to the
// result (local reshape, then reshard the result); else derive the operand
// sharding from the target backwards; else the default action.
PartitionedValue handle_reshape(SpmdContext& context, const HandlerInput& in) {
  const PartitionedValue& operand = in.operands[0];
  const auto& source_dims = operand.base_shape.dims();
  const auto& target_dims = in.original.shape.dims();
  auto local_reshape = [&](const PartitionedValue& from, const Sharding& to) {
    InstrId id = context.builder().reshape(from.id, shard_shape(to, target_dims));
    return reshard(context, PartitionedValue{id, in.original.shape, to}, in.target);
  };
  if (auto forward = reshape_sharding(source_dims, target_dims, operand.sharding);
      forward && local_reshape_is_exact(source_dims, operand.sharding, target_dims, *forward))
    return local_reshape(operand, *forward);
  if (auto backward = reshape_sharding(target_dims, source_dims, in.target);
      backward && local_reshape_is_exact(source_dims, *backward, target_dims, in.target))
    return local_reshape(reshard(context, operand, *backward), in.target);
  return handle_default(context, in);
}

PartitionedValue handle_default(SpmdContext& context, const HandlerInput& in) {
  ++context.stats().default_fallbacks;
  std::vector<InstrId> operands;
  for (const PartitionedValue& operand : in.operands) {
    const Sharding replicated =
        operand.base_shape.is_tuple()
            ? Sharding::tuple(std::vector<Sharding>(
                  static_cast<size_t>(operand.base_shape.leaf_count()), Sharding::replicated()))
            : Sharding::replicated();
    operands.push_back(reshard(context, operand, replicated).id);
  }
  // Every operand whole: the result has the op's own (full) shape, so no
  // shape rule is needed (ops without one, e.g. fft or cholesky, work too).
  InstrId whole = clone_with_shape(context, in.original, std::move(operands), in.original.shape);
  const Sharding replicated =
      in.original.shape.is_tuple()
          ? Sharding::tuple(std::vector<Sharding>(
                static_cast<size_t>(in.original.shape.leaf_count()), Sharding::replicated()))
          : Sharding::replicated();
  return reshard(context, PartitionedValue{whole, in.original.shape, replicated}, in.target);
}

}  // namespace podsim::compiler
