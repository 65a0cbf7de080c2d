// partition_spmd: visits the entry computation in topological order and
// dispatches each instruction to its handler (gspmd-algorithms.md 3.1).
// Non-entry computations (reduce bodies, ...) are copied unchanged.
#include "compiler/spmd/partitioner.h"

#include <cassert>

#include <fmt/format.h>

#include "compiler/sharding/sharding_util.h"
#include "compiler/spmd/spmd_handlers.h"

namespace podsim::compiler {
namespace {

// The instruction's sharding as a leaf the partitioner supports; maximal is
// treated as replicated (every device computes the value).
Sharding instruction_sharding(const Instruction& instr) {
  Sharding s = instr.sharding ? parse_sharding(*instr.sharding, instr.location) : Sharding::replicated();
  s = s.without_group_and_metadata();
  if (s.is_maximal()) return Sharding::replicated();
  if (s.is_tuple() || instr.shape.is_tuple())
    throw UserError(instr.location, fmt::format("SPMD partitioner: tuple-shaped '{}' is not supported yet", instr.name),
                    "partition modules whose entry values are arrays");
  if (s.is_manual() || s.has_manual_subgroup() || s.is_unknown())
    throw UserError(instr.location, fmt::format("SPMD partitioner: sharding of '{}' is not supported yet", instr.name),
                    "use replicated or tiled shardings");
  return s;
}

PartitionedValue handle_parameter(SpmdContext& context, const Instruction& instr, const Sharding& target) {
  Shape local(instr.shape.dtype(), shard_shape(target, instr.shape.dims()));
  InstrId id = context.builder().parameter(instr.attrs.parameter_number, local, instr.name);
  context.builder().set_sharding(id, target.to_string());
  return PartitionedValue{id, instr.shape, target};
}

// Constant and iota: compute the whole value, then slice this device's tile.
PartitionedValue handle_full_value(SpmdContext& context, const Instruction& instr, const Sharding& target) {
  InstrId id = clone_with_operands(context, instr, {});
  return reshard(context, PartitionedValue{id, instr.shape, Sharding::replicated()}, target);
}

PartitionedValue dispatch(SpmdContext& context, const HandlerInput& in) {
  const Opcode op = in.original.opcode;
  if (op == Opcode::kConstant || op == Opcode::kIota) return handle_full_value(context, in.original, in.target);
  if (is_elementwise(op) || op == Opcode::kConvert) return handle_elementwise(context, in);
  switch (op) {
    case Opcode::kBroadcast: return handle_broadcast(context, in);
    case Opcode::kTranspose: return handle_transpose(context, in);
    case Opcode::kReshape: return handle_reshape(context, in);
    case Opcode::kReduce: return handle_reduce(context, in);
    case Opcode::kDot: return handle_dot(context, in);
    default: return handle_default(context, in);
  }
}

void count_collectives(const Computation& entry, SpmdStats& stats) {
  for (const Instruction& instr : entry.instructions()) {
    switch (instr.opcode) {
      case Opcode::kAllReduce: ++stats.all_reduces; break;
      case Opcode::kAllGather: ++stats.all_gathers; break;
      case Opcode::kAllToAll: ++stats.all_to_alls; break;
      case Opcode::kCollectivePermute: ++stats.collective_permutes; break;
      case Opcode::kReduceScatter: ++stats.reduce_scatters; break;
      default: break;
    }
  }
}

}  // namespace

SpmdResult partition_spmd_with_stats(const Module& annotated, const SpmdOptions& options) {
  const int64_t devices = options.num_partitions > 0 ? options.num_partitions : annotated.num_partitions();
  SpmdResult out;
  Module& result = out.module;
  result = annotated;  // copies every computation (same ids); the entry is replaced below
  result.set_num_partitions(devices);
  const Computation& entry = annotated.entry();

  SpmdContext context(&result, devices);
  std::vector<PartitionedValue> values(static_cast<size_t>(entry.size()));
  for (InstrId id = 0; id < entry.size(); ++id) {
    const Instruction& instr = entry.instr(id);
    const Sharding target = instruction_sharding(instr);
    // Everything emitted for this instruction carries its model-level name.
    context.builder().set_op_name_scope(instr.op_name.empty() ? instr.name : instr.op_name);
    if (instr.shape.is_array()) target.validate(instr.shape.rank(), devices, instr.location);
    if (instr.opcode == Opcode::kParameter) {
      values[static_cast<size_t>(id)] = handle_parameter(context, instr, target);
      continue;
    }
    std::vector<PartitionedValue> operands;
    for (InstrId operand : instr.operands) operands.push_back(values[static_cast<size_t>(operand)]);
    values[static_cast<size_t>(id)] = dispatch(context, HandlerInput{instr, operands, target});
    [[maybe_unused]] const PartitionedValue& v = values[static_cast<size_t>(id)];
    assert(v.sharding == target);
    assert(context.local_shape(v.id).dims() == shard_shape(target, instr.shape.dims()));
  }
  const PartitionedValue& root = values[static_cast<size_t>(entry.root())];
  const std::string entry_name = entry.name();
  context.builder().set_sharding(root.id, root.sharding.to_string());
  Computation built = std::move(context.builder()).build(root.id);
  built.set_name(entry_name);
  result.mutable_computation(result.entry_id()) = std::move(built);
  out.stats = context.stats();
  count_collectives(result.entry(), out.stats);
  return out;
}

Module partition_spmd(const Module& annotated, const SpmdOptions& options) {
  return partition_spmd_with_stats(annotated, options).module;
}

}  // namespace podsim::compiler
