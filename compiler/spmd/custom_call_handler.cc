// Custom-calls other than "Sharding", manual regions and the ops whose partitioning is "run the
// op on the local shard" (docs/reference/gspmd.md#per-op-partitioning, XLA's
// SpmdPartitioningVisitor::HandleCustomCall): SPMDFullToShardShape / SPMDShardToFullShape (and
// Shardy's equivalents), {manual} instructions, placement calls, TopK/sort, shape-only ops.
// What each does: docs/compiler.md#custom-calls-and-manual-regions
#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "compiler/ir/flash_attention.h"
#include "compiler/sharding/sharding_util.h"
#include "compiler/spmd/spmd_handlers.h"

namespace podsim::compiler {

bool is_manual_region_entry(const Instruction& instr) {
  return instr.opcode == Opcode::kCustomCall &&
         (instr.attrs.custom_call_target == "SPMDFullToShardShape" ||
          instr.attrs.custom_call_target == "xla.sdy.GlobalToLocalShape");
}

bool is_manual_region_exit(const Instruction& instr) {
  return instr.opcode == Opcode::kCustomCall &&
         (instr.attrs.custom_call_target == "SPMDShardToFullShape" ||
          instr.attrs.custom_call_target == "xla.sdy.LocalToGlobalShape");
}

bool is_fully_manual(const Sharding& sharding) {
  if (sharding.is_manual()) return true;
  if (!sharding.is_tuple() || sharding.tuple_elements().empty()) return false;
  return std::all_of(sharding.tuple_elements().begin(), sharding.tuple_elements().end(),
                     [](const Sharding& leaf) { return leaf.is_manual(); });
}

InstrId clone_with_shape(SpmdContext& context, const Instruction& original,
                         std::vector<InstrId> operands, Shape shape) {
  Instruction copy = original;
  copy.name.clear();
  copy.sharding.reset();
  copy.operands = std::move(operands);
  copy.shape = std::move(shape);
  return context.builder().add(std::move(copy));
}

namespace {

bool all_leaves(const Sharding& s, bool (*pred)(const Sharding&)) {
  if (!s.is_tuple()) return pred(s);
  return std::all_of(s.tuple_elements().begin(), s.tuple_elements().end(), pred);
}

void expect_local_shape(SpmdContext& context, const Instruction& instr, InstrId local,
                        const Shape& expected, const char* what) {
  if (context.local_shape(local) == expected) return;
  throw UserError(
      instr.location,
      fmt::format("SPMD partitioner: {} '{}': the per-device shape is {}, the op says {}", what,
                  instr.name, context.local_shape(local).to_string(false),
                  expected.to_string(false)),
      "the sharding of the full-shape side must cut it into exactly the manual shape");
}

// Operands of a local op: array operands with the result's dims take the
// result's (array) sharding; the rest stay as they are.
std::vector<InstrId> local_operands(SpmdContext& context, const HandlerInput& in) {
  std::vector<InstrId> ids;
  for (const PartitionedValue& operand : in.operands) {
    const bool same_dims = in.original.shape.is_array() && operand.base_shape.is_array() &&
                           operand.base_shape.dims() == in.original.shape.dims() &&
                           !in.target.is_tuple();
    ids.push_back(same_dims ? reshard(context, operand, in.target).id : operand.id);
  }
  return ids;
}

}  // namespace

PartitionedValue handle_manual_op(SpmdContext& context, const HandlerInput& in) {
  std::vector<InstrId> operands;
  for (const PartitionedValue& operand : in.operands) {
    const bool fits = all_leaves(
        operand.sharding, [](const Sharding& s) { return s.is_manual() || s.is_tile_maximal(); });
    if (!fits)
      throw UserError(
          in.original.location,
          fmt::format(
              "SPMD partitioner: '{}' is manual but its operand has the automatic sharding {}",
              in.original.name, operand.sharding.to_string()),
          "enter the manual region through custom-call SPMDFullToShardShape");
    operands.push_back(operand.id);
  }
  // Inside a manual region every value has its declared (per-device) shape.
  return PartitionedValue{
      clone_with_shape(context, in.original, std::move(operands), in.original.shape),
      in.original.shape, in.target};
}

// Operand k of a region boundary is result leaf k (Shardy's boundaries take
// several operands and return a tuple; XLA's take one).
namespace {

PartitionedValue region_boundary(SpmdContext& context, const HandlerInput& in, bool entry) {
  const std::vector<Sharding> leaves = leaf_shardings(in.target, in.original.shape);
  if (leaves.size() != in.operands.size())
    throw UserError(in.original.location,
                    fmt::format("SPMD partitioner: '{}' has {} operands for {} results",
                                in.original.name, in.operands.size(), leaves.size()),
                    "a manual-region boundary maps operand k to result k");
  const std::vector<const Shape*> shapes = in.original.shape.leaves();
  std::vector<InstrId> copies;
  for (size_t k = 0; k < in.operands.size(); ++k) {
    const PartitionedValue& operand = in.operands[k];
    InstrId local = operand.id;
    // An entry whose manual side also tiles data dims (refined open dims):
    // the operand is first laid out as the automatic form of that sharding.
    if (entry && leaves[k].is_tiled() && leaves[k].has_manual_subgroup() &&
        leaves[k].num_tiles() > 1 && operand.base_shape.is_array()) {
      int64_t d = -1;
      for (int64_t i = 0; i < shapes[k]->rank() && i < operand.base_shape.rank(); ++i)
        if (shapes[k]->dim(static_cast<int>(i)) != operand.base_shape.dim(static_cast<int>(i)))
          d = i;
      if (auto automatic = d >= 0 ? manual_to_data_dim(leaves[k], d) : std::nullopt)
        local = reshard(context, operand, *automatic).id;
    }
    if (entry && local == operand.id && operand.sharding.is_tiled() &&
        !evenly_partitions(operand.sharding, operand.base_shape.dims())) {
      // Uneven tiles: XLA pads the partitioned operand with zeros.
      InstrId zero = context.builder().scalar_constant(context.local_shape(local).dtype(), 0);
      local = context.mask_padding(operand, sharded_dims(operand.sharding), zero);
    }
    expect_local_shape(context, in.original, local, partitioned_shape(*shapes[k], leaves[k]),
                       entry ? "manual region entry" : "manual region exit");
    copies.push_back(context.builder().unary(Opcode::kCopy, local));
  }
  const InstrId id =
      in.original.shape.is_tuple() ? context.builder().tuple(std::move(copies)) : copies[0];
  return PartitionedValue{id, in.original.shape, in.target};
}

}  // namespace

PartitionedValue handle_manual_region_entry(SpmdContext& context, const HandlerInput& in) {
  return region_boundary(context, in, true);
}

PartitionedValue handle_manual_region_exit(SpmdContext& context, const HandlerInput& in) {
  return region_boundary(context, in, false);
}

namespace {

// TopK (custom-call with a (value, index) comparator) whose sorted dim stays
// tiled n ways: each device takes the top k of its shard (indices made
// global with its offset), the n candidate sets are all-gathered along the
// dim (k*n instead of the whole dim), sorted with the same comparator and
// the first k kept, as XLA's PartitionSortInTopK. nullopt when it does not
// apply (no comparator, uneven tiles, k above the shard).
std::optional<PartitionedValue> topk_from_candidates(SpmdContext& context, const HandlerInput& in,
                                                     int64_t dim) {
  const Instruction& topk = in.original;
  const PartitionedValue& operand = in.operands.at(0);
  if (topk.opcode != Opcode::kCustomCall || topk.called.size() != 1 || !topk.shape.is_tuple() ||
      topk.shape.tuple_shapes().size() != 2 || !operand.sharding.is_tiled())
    return std::nullopt;
  const int64_t n = tile_count(operand.sharding, dim);
  const int64_t extent = operand.base_shape.dim(static_cast<int>(dim));
  const int64_t k = topk.shape.tuple_shape(0).dim(static_cast<int>(dim));
  if (n <= 1 || extent % n != 0 || k > extent / n) return std::nullopt;
  auto& b = context.builder();
  const Shape local_in = context.local_shape(operand.id);
  std::vector<int64_t> candidate_dims = local_in.dims();
  candidate_dims[static_cast<size_t>(dim)] = k;
  const Shape values_shape(topk.shape.tuple_shape(0).dtype(), candidate_dims);
  const Shape index_shape(topk.shape.tuple_shape(1).dtype(), candidate_dims);
  InstrId local =
      clone_with_shape(context, topk, {operand.id}, Shape::tuple({values_shape, index_shape}));
  InstrId values = b.get_tuple_element(local, 0);
  InstrId indices = b.get_tuple_element(local, 1);
  InstrId offset = context.partition_offset(operand.sharding, operand.base_shape.dims(), dim);
  if (index_shape.dtype() != DType::kS32) offset = b.convert(offset, index_shape.dtype());
  indices = b.binary(Opcode::kAdd, indices, b.broadcast(offset, candidate_dims, {}));
  const int64_t axis[] = {dim};
  const ReplicaGroups groups = context.groups_along_tile_dims(operand.sharding, axis);
  values = b.all_gather(values, dim, groups);
  indices = b.all_gather(indices, dim, groups);
  const Shape gathered_values = context.local_shape(values);
  const Shape gathered_indices = context.local_shape(indices);
  Instruction sort;
  sort.opcode = Opcode::kSort;
  sort.operands = {values, indices};
  sort.attrs.dimensions = {dim};
  sort.called = topk.called;
  sort.shape = Shape::tuple({gathered_values, gathered_indices});
  sort.location = topk.location;
  InstrId sorted = b.add(std::move(sort));
  std::vector<InstrId> leaves;
  for (int64_t leaf = 0; leaf < 2; ++leaf) {
    InstrId all = b.get_tuple_element(sorted, leaf);
    std::vector<SliceDim> first_k;
    for (int64_t d = 0; d < gathered_values.rank(); ++d)
      first_k.push_back(SliceDim{0, d == dim ? k : gathered_values.dim(static_cast<int>(d)), 1});
    leaves.push_back(b.slice(all, std::move(first_k)));
  }
  const Sharding result_leaf = partially_replicate_on_dims(operand.sharding, axis);
  PartitionedValue result{b.tuple(std::move(leaves)), topk.shape,
                          Sharding::tuple({result_leaf, result_leaf})};
  return reshard(context, result, in.target);
}

}  // namespace

// Sort / TopK: the operands with `dim` unsharded and every other dim as the
// first operand has it (else as the target's first leaf has it); local op;
// then the target. Tiles of the sorted dim move to a free dim they divide
// (one all-to-all, as XLA's HandleSort) rather than being gathered.
PartitionedValue handle_sort_like(SpmdContext& context, const HandlerInput& in, int64_t dim) {
  const int64_t dims[] = {dim};
  auto unsorted = [&](const Sharding& s) {
    return s.is_tiled() ? partially_replicate_on_dims(s, dims) : Sharding::replicated();
  };
  const Sharding& lead = in.target.is_tuple() ? in.target.tuple_elements().at(0) : in.target;
  Sharding local = unsorted(lead);
  const PartitionedValue& first = in.operands.at(0);
  if (first.sharding.is_tiled() && first.base_shape.is_array()) {
    local = unsorted(first.sharding);
    const int64_t n = tile_count(first.sharding, dim);
    const auto& extents = first.base_shape.dims();
    const auto& out = in.original.shape.is_tuple() ? in.original.shape.tuple_shape(0).dims()
                                                   : in.original.shape.dims();
    for (int64_t d = 0; n > 1 && d < static_cast<int64_t>(extents.size()); ++d) {
      if (d == dim || d >= static_cast<int64_t>(out.size())) continue;
      const int64_t tiles = tile_count(first.sharding, d) * n;
      if (extents[static_cast<size_t>(d)] % tiles == 0 &&
          out[static_cast<size_t>(d)] % tiles == 0) {
        local = move_and_merge_tiles(first.sharding, dim, d);
        break;
      }
    }
    if (local.num_tiles() <= 1 && unsorted(lead).num_tiles() > 1) local = unsorted(lead);
    if (tile_count(local, dim) == 1 && n > 1 && unsorted(first.sharding) == local)
      if (auto candidates = topk_from_candidates(context, in, dim)) return *candidates;
  }
  std::vector<InstrId> operands;
  for (const PartitionedValue& operand : in.operands)
    operands.push_back(reshard(context, operand, local).id);
  const Sharding result = in.original.shape.is_tuple()
                              ? Sharding::tuple(std::vector<Sharding>(
                                    static_cast<size_t>(in.original.shape.leaf_count()), local))
                              : local;
  InstrId id = clone_with_shape(context, in.original, std::move(operands),
                                partitioned_shape(in.original.shape, result));
  return reshard(context, PartitionedValue{id, in.original.shape, result}, in.target);
}

namespace {

// The tiling of a flash operand's or result's batch and head dims, moved
// from rank `from` to rank `to` (compiler/ir/flash_attention.h layouts).
Sharding flash_batch_heads(const Sharding& s, int64_t from, int64_t to) {
  if (!s.is_tiled()) return Sharding::replicated();
  const auto src = flash_batch_head_dims(from);
  const auto tgt = flash_batch_head_dims(to);
  return propagate_along_dims_and_replicate_others(
      s, DimCorrespondence{{src.begin(), src.end()}, {tgt.begin(), tgt.end()}, to});
}

// Fused attention: B and N keep their tiling (the target's, else q's), L, T
// and D are resharded to replicated; each device runs the kernel on its
// (batch, head) shard, no collective; the results go to the target.
PartitionedValue handle_flash_attention(SpmdContext& context, const HandlerInput& in) {
  const Instruction& instr = in.original;
  const int64_t lead_rank = instr.shape.tuple_shape(0).rank();
  const Sharding& wanted = in.target.is_tuple() && !in.target.tuple_elements().empty()
                               ? in.target.tuple_elements().front()
                               : in.target;
  Sharding lead = flash_batch_heads(wanted, lead_rank, lead_rank);
  if (!wanted.is_tiled()) {
    const PartitionedValue& q = in.operands.at(0);
    lead = flash_batch_heads(q.sharding, q.base_shape.rank(), lead_rank);
  }
  std::vector<InstrId> operands;
  for (const PartitionedValue& operand : in.operands)
    operands.push_back(
        reshard(context, operand, flash_batch_heads(lead, lead_rank, operand.base_shape.rank()))
            .id);
  std::vector<Sharding> leaves;
  for (const Shape& leaf : instr.shape.tuple_shapes())
    leaves.push_back(flash_batch_heads(lead, lead_rank, leaf.rank()));
  const Sharding result = Sharding::tuple(std::move(leaves));
  InstrId id =
      clone_with_shape(context, instr, std::move(operands), partitioned_shape(instr.shape, result));
  return reshard(context, PartitionedValue{id, instr.shape, result}, in.target);
}

}  // namespace

PartitionedValue handle_custom_call(SpmdContext& context, const HandlerInput& in) {
  const Instruction& instr = in.original;
  if ((is_flash_attention(instr) || is_flash_attention_bwd(instr)) && instr.shape.is_tuple() &&
      !in.operands.empty())
    return handle_flash_attention(context, in);
  if (instr.attrs.custom_call_target == "TopK" && in.operands.size() == 1 &&
      in.operands[0].base_shape.is_array() && in.operands[0].base_shape.rank() >= 1)
    return handle_sort_like(context, in, in.operands[0].base_shape.rank() - 1);
  if (instr.shape.is_tuple() && !in.target.is_tuple() && !in.target.is_tile_maximal())
    return handle_default(context, in);
  InstrId id = clone_with_shape(context, instr, local_operands(context, in),
                                partitioned_shape(instr.shape, in.target));
  return PartitionedValue{id, instr.shape, in.target};
}

PartitionedValue handle_outfeed(SpmdContext& context, const HandlerInput& in) {
  std::vector<InstrId> operands;
  for (const PartitionedValue& operand : in.operands) operands.push_back(operand.id);
  if (!in.operands.empty() && in.original.sharding) {
    const PartitionedValue& data = in.operands[0];
    Sharding s =
        parse_sharding(*in.original.sharding, in.original.location).without_group_and_metadata();
    const int64_t leaves = data.base_shape.leaf_count();
    bool fits = true;
    if (s.is_tuple()) {
      const auto& all = s.tuple_elements();
      fits = static_cast<int64_t>(all.size()) >= leaves;
      if (fits) {
        std::vector<Sharding> mine(all.begin(), all.begin() + leaves);
        s = data.base_shape.is_tuple() ? Sharding::tuple(std::move(mine)) : mine[0];
      }
    } else if (data.base_shape.is_tuple()) {
      s = Sharding::tuple(std::vector<Sharding>(static_cast<size_t>(leaves), s));
    }
    auto placed = [](const Sharding& leaf) {
      return leaf.is_maximal() ? Sharding::replicated() : leaf;
    };
    if (s.is_tuple()) {
      std::vector<Sharding> mine;
      for (const Sharding& leaf : s.tuple_elements()) mine.push_back(placed(leaf));
      s = Sharding::tuple(std::move(mine));
    } else {
      s = placed(s);
    }
    if (fits) operands[0] = reshard(context, data, s).id;
  }
  InstrId id = clone_with_shape(context, in.original, std::move(operands), in.original.shape);
  return PartitionedValue{id, in.original.shape, in.target};
}

// XLA's HandleInfeed: with the data tiled evenly each device infeeds only
// its shard, so the host sends each device its part. An uneven tiling
// (XLA: one conditional branch per distinct shard shape, padded) or data
// that is itself a tuple keeps the default: the whole value on every device,
// then sliced.
PartitionedValue handle_infeed(SpmdContext& context, const HandlerInput& in) {
  const Shape& shape = in.original.shape;
  if (!shape.is_tuple() || shape.tuple_shapes().size() != 2 || !shape.tuple_shape(0).is_array() ||
      !in.target.is_tuple() || in.operands.size() != 1)
    return handle_default(context, in);
  const Sharding& data = in.target.tuple_elements()[0];
  const Shape& full = shape.tuple_shape(0);
  if (!data.is_tiled() || data.has_manual_subgroup()) return handle_default(context, in);
  for (int64_t d = 0; d < full.rank(); ++d)
    if (full.dim(static_cast<int>(d)) % tile_count(data, d) != 0)
      return handle_default(context, in);
  InstrId id = clone_with_shape(context, in.original, {in.operands[0].id},
                                partitioned_shape(shape, in.target));
  return PartitionedValue{id, shape, in.target};
}

PartitionedValue handle_local_op(SpmdContext& context, const HandlerInput& in) {
  std::vector<InstrId> operands;
  const std::vector<Sharding> leaves = leaf_shardings(in.target, in.original.shape);
  switch (in.original.opcode) {
    case Opcode::kOptimizationBarrier:
      // Tuple in, same tuple out.
      operands.push_back(reshard(context, in.operands.at(0), in.target).id);
      break;
    case Opcode::kAddDependency:
      operands.push_back(reshard(context, in.operands.at(0), in.target).id);
      for (size_t i = 1; i < in.operands.size(); ++i) operands.push_back(in.operands[i].id);
      break;
    default:
      // after-all (tokens), rng (scalar parameters): operands as they are.
      for (const PartitionedValue& operand : in.operands)
        operands.push_back(operand.base_shape.is_scalar() || operand.base_shape.leaf_count() == 0
                               ? operand.id
                               : reshard(context, operand, Sharding::replicated()).id);
      break;
  }
  InstrId id = clone_with_shape(context, in.original, std::move(operands),
                                partitioned_shape(in.original.shape, in.target));
  return PartitionedValue{id, in.original.shape, in.target};
}

}  // namespace podsim::compiler
