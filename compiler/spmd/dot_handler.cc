// Dot handler (docs/reference/gspmd.md#dot-strategies): choose a plan by cost
// (dot_strategies.h), reshard the operands to it, run the local dot (or the
// windowed loop of #windowed-einsum in place of an all-gather), combine the partial sums
// of a contracting-sharded plan with one reduce-scatter or all-reduce, and
// reshard the result to the target. A sparse dot's metadata is resharded
// with its stored operand.
#include "compiler/spmd/dot_handler.h"

#include <algorithm>
#include <numeric>

#include "compiler/ir/shape_inference.h"

#include "compiler/sharding/sharding_util.h"
#include "compiler/spmd/halo_exchange.h"

namespace podsim::compiler {
namespace {

EinsumSide side_of(int side) { return side == 0 ? EinsumSide::kLhs : EinsumSide::kRhs; }

// The label whose dim on `side` is `dim` (every operand dim of a dot is a label).
const EinsumLabel* label_at(const EinsumSpec& spec, EinsumSide side, int64_t dim) {
  for (const EinsumLabel& label : spec.labels)
    if (spec.dim_of(label, side) == dim) return &label;
  return nullptr;
}

// Does one loop step's dot (step_flops) last at least as long as its
// permute of `permuted_bytes` (halved per link direction when bidirectional
// and the chunk extent t on the rotated dim can be halved, t >= 2)?
// partitioner.h derives the flops-per-byte threshold.
bool step_hides_permute(const SpmdOptions& options, double step_flops, double permuted_bytes,
                        int64_t t) {
  const double directions = options.windowed_einsum_bidirectional && t >= 2 ? 2.0 : 1.0;
  return step_flops >= options.windowed_einsum_min_flops_per_byte * permuted_bytes / directions;
}

// The windowed form of docs/reference/gspmd.md#windowed-einsum for operand `side`, if the plan
// would all-gather exactly one of its dims (a contracting dim or its own free dim) and the options
// allow it.
std::optional<WindowedDot> windowed_candidate(const SpmdContext& context, const HandlerInput& in,
                                              const EinsumSpec& spec, const DotPlan& plan,
                                              int side) {
  const SpmdOptions& options = context.options();
  const PartitionedValue& value = in.operands[static_cast<size_t>(side)];
  const Sharding& needed = side == 0 ? plan.lhs : plan.rhs;
  if (value.base_shape.byte_size() < options.windowed_einsum_threshold_bytes) return std::nullopt;
  // A gather another dot shares (built already, or the operand has other dot
  // readers) stays one all-gather: XLA's check_users_sharding.
  if (context.einsum_readers(in.original.operands[static_cast<size_t>(side)]) > 1)
    return std::nullopt;
  for (const Sharding& built : context.reshards_built(value.id))
    if (built == needed) return std::nullopt;
  std::vector<int64_t> gathered;
  for (int64_t d = 0; d < value.base_shape.rank(); ++d) {
    const int64_t now = tile_count(value.sharding, d), then = tile_count(needed, d);
    if (now != then && then != 1) return std::nullopt;
    if (now > 1 && then == 1) gathered.push_back(d);
  }
  if (gathered.size() != 1 || partially_replicate_on_dims(value.sharding, gathered) != needed)
    return std::nullopt;
  const int64_t p = tile_count(value.sharding, gathered[0]);
  if (p > options.windowed_einsum_max_devices) return std::nullopt;
  // Cost comparison (partitioner.h): per step 2 * (local multiply-adds of
  // the plan) / p flops against one permuted chunk (this device's shard of
  // the operand), split over the link directions used.
  double chunk_bytes = static_cast<double>(dtype_bytes(value.base_shape.dtype()));
  for (int64_t e : shard_shape(value.sharding, value.base_shape.dims()))
    chunk_bytes *= static_cast<double>(e);
  const int64_t t = ceil_div(value.base_shape.dim(static_cast<int>(gathered[0])), p);
  if (!step_hides_permute(options, 2 * plan.cost.flops / static_cast<double>(p), chunk_bytes, t))
    return std::nullopt;
  const EinsumLabel* label = label_at(spec, side_of(side), gathered[0]);
  if (label == nullptr) return std::nullopt;
  const LabelKind own_free = side == 0 ? LabelKind::kLhsFree : LabelKind::kRhsFree;
  WindowedDot w;
  w.original = &in.original;
  w.windowed_side = side;
  w.windowed = value;
  w.windowed_dim = gathered[0];
  w.bidirectional = options.windowed_einsum_bidirectional;
  if (label->kind == LabelKind::kContracting) {
    w.other_dim = spec.dim_of(*label, side_of(1 - side));
  } else if (label->kind == own_free) {
    w.out_dim = label->out;
  } else {
    return std::nullopt;  // batch dims keep the all-gather
  }
  return w;
}

// The reduce-scatter form of the windowed einsum: the plan's partial sums would be
// reduce-scattered onto a free dim of the result, the result is big enough
// and each step's block dot can hide the permute of one block.
std::optional<WindowedReduceScatter> windowed_reduce_scatter_candidate(
    const SpmdContext& context, const HandlerInput& in, const EinsumSpec& spec, const DotPlan& plan,
    const ReplicaGroups& groups) {
  const SpmdOptions& options = context.options();
  const Shape& out = in.original.shape;
  if (out.byte_size() < options.windowed_einsum_threshold_bytes) return std::nullopt;
  const int64_t devices = context.num_devices();
  const int64_t p = groups.group_size(devices);
  if (p > options.windowed_einsum_max_devices) return std::nullopt;
  const int64_t e = reduce_scatter_dim(plan.local_out, in.target, groups, out.rank(), devices);
  if (e < 0) return std::nullopt;
  const EinsumLabel* label = label_at(spec, EinsumSide::kOut, e);
  if (label == nullptr || label->kind == LabelKind::kBatch) return std::nullopt;
  // Per step: 2 * multiply-adds / p flops against one block of the result.
  double block_bytes = static_cast<double>(dtype_bytes(out.dtype())) / static_cast<double>(p);
  for (int64_t x : shard_shape(plan.local_out, out.dims())) block_bytes *= static_cast<double>(x);
  if (!step_hides_permute(options, 2 * plan.cost.flops / static_cast<double>(p), block_bytes,
                          ceil_div(out.dim(static_cast<int>(e)), p)))
    return std::nullopt;
  WindowedReduceScatter w;
  w.original = &in.original;
  w.sliced_side = label->kind == LabelKind::kLhsFree ? 0 : 1;
  w.sliced_dim = w.sliced_side == 0 ? label->lhs : label->rhs;
  w.out_dim = e;
  w.groups = groups;
  w.target = in.target;
  w.base_shape = out;
  w.bidirectional = options.windowed_einsum_bidirectional;
  return w;
}

}  // namespace

PartitionedValue partition_einsum(SpmdContext& context, const HandlerInput& in,
                                  const EinsumSpec& spec, const SparseOperand* sparse) {
  OperandReuse reuse;
  for (int side = 0; side < 2; ++side) {
    reuse.built[side] = context.reshards_built(in.operands[static_cast<size_t>(side)].id);
    reuse.sharers[side] = context.einsum_readers(in.original.operands[static_cast<size_t>(side)]);
  }
  const DotPlan plan = choose_dot_plan(
      spec, DotShardings{in.operands[0].sharding, in.operands[1].sharding, in.target},
      context.num_devices(), &context.relabeled_plans(), reuse);
  if (sparse) {
    // Shards of the sparse dim must hold whole groups and whole metadata
    // elements, with no padding; otherwise nothing is split there.
    const Sharding& needed = sparse->side == 0 ? plan.lhs : plan.rhs;
    const int64_t t = tile_count(needed, sparse->dim);
    const int64_t stored = in.operands[static_cast<size_t>(sparse->side)].base_shape.dim(
        static_cast<int>(sparse->dim));
    const int64_t meta = sparse->metadata.base_shape.dim(static_cast<int>(sparse->dim));
    const int64_t unit = std::lcm(sparse->group, sparse->values_per_element);
    if (t > 1 &&
        (stored % (t * unit) != 0 || meta * sparse->values_per_element != stored || meta % t != 0))
      return handle_default(context, in);
  }

  // Windowed: the bigger of the eligible operands is rotated (not for a
  // sparse dot, whose loop would have to rotate the metadata too).
  std::optional<WindowedDot> windowed;
  for (int side : {1, 0}) {
    if (sparse) break;
    auto w = windowed_candidate(context, in, spec, plan, side);
    if (w && (!windowed ||
              w->windowed.base_shape.byte_size() > windowed->windowed.base_shape.byte_size()))
      windowed = std::move(w);
  }

  // Operands in the plan's layout; padding of tiled contracting dims zeroed
  // on both sides (garbage * garbage could be NaN,
  // docs/reference/gspmd.md#uneven-shapes-and-masking).
  std::vector<int64_t> masked_dims[2];
  for (int64_t j : plan.partial_tile_dims)
    for (int side = 0; side < 2; ++side)
      masked_dims[side].push_back(spec.dim_of(spec.labels[static_cast<size_t>(j)], side_of(side)));
  InstrId locals[2] = {kNoId, kNoId};
  for (int side = 0; side < 2; ++side) {
    const PartitionedValue& operand = in.operands[static_cast<size_t>(side)];
    PartitionedValue v = windowed && windowed->windowed_side == side
                             ? operand
                             : reshard(context, operand, side == 0 ? plan.lhs : plan.rhs);
    locals[side] =
        context.mask_padding(v, masked_dims[side], context.zero(operand.base_shape.dtype()));
  }

  std::optional<ReplicaGroups> groups;
  if (!plan.partial_tile_dims.empty())
    groups = context.groups_along_tile_dims(plan.joint, plan.partial_tile_dims);
  if (!windowed && groups) {
    if (auto w = windowed_reduce_scatter_candidate(context, in, spec, plan, *groups)) {
      w->lhs = locals[0];
      w->rhs = locals[1];
      return PartitionedValue{emit_windowed_reduce_scatter(context, *w), in.original.shape,
                              in.target};
    }
  }
  InstrId local = kNoId;
  if (windowed) {
    windowed->windowed.id = locals[windowed->windowed_side];
    windowed->other_local = locals[1 - windowed->windowed_side];
    local = emit_windowed_dot(context, *windowed);
  } else {
    // A grouped convolution keeps groups / tiles whole groups per device.
    Instruction local_op = in.original;
    for (int64_t j = 0; j < spec.rank(); ++j)
      if (const int64_t g = spec.labels[static_cast<size_t>(j)].groups; g > 0)
        local_op.attrs.feature_group_count = g / tile_count(plan.joint, j);
    std::vector<InstrId> operands = {locals[0], locals[1]};
    if (sparse)
      operands.push_back(
          reshard(context, sparse->metadata, sparse->side == 0 ? plan.lhs : plan.rhs).id);
    local = clone_with_operands(context, local_op, operands);
  }
  if (!groups)
    return reshard(context, PartitionedValue{local, in.original.shape, plan.local_out}, in.target);
  PartialValue partial{local, in.original.shape, plan.local_out, *groups,
                       context.scalar_reducer(Opcode::kAdd, in.original.shape.dtype())};
  return reduce_scatter_partial(context, partial, in.target);
}

PartitionedValue handle_dot(SpmdContext& context, const HandlerInput& in) {
  if (in.original.shape.is_tuple()) return handle_default(context, in);
  if (in.operands.size() == 2)
    return partition_einsum(
        context, in,
        einsum_of_dot(in.original, in.operands[0].base_shape, in.operands[1].base_shape));
  const std::optional<DotSparsity> sparsity = dot_sparsity(in.original.attrs);
  if (in.operands.size() != 3 || !sparsity) return handle_default(context, in);
  // Plans are chosen on the logical operands; the stored one is split alike.
  Shape logical[2] = {in.operands[0].base_shape, in.operands[1].base_shape};
  Shape& dense = logical[sparsity->operand];
  const PartitionedValue& metadata = in.operands[2];
  if (sparsity->dim < 0 || sparsity->dim >= dense.rank() ||
      metadata.base_shape.rank() != dense.rank() || !is_integral(metadata.base_shape.dtype()))
    return handle_default(context, in);
  dense = sparsity->logical_shape(dense);
  const SparseOperand sparse{sparsity->operand, sparsity->dim, sparsity->n,
                             sparsity->values_per_element(metadata.base_shape.dtype()), metadata};
  return partition_einsum(context, in, einsum_of_dot(in.original, logical[0], logical[1]), &sparse);
}

}  // namespace podsim::compiler
