// partition_spmd: visits the entry computation in topological order and
// dispatches each instruction to its handler (docs/reference/gspmd.md#partitioner-structure);
// while/call handlers partition their callees the same way
// (partition_computation). Other non-entry computations (reduce bodies, ...)
// are copied unchanged.
#include "compiler/spmd/partitioner.h"

#include <cassert>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "compiler/sharding/sharding_util.h"
#include "compiler/spmd/spmd_handlers.h"

namespace podsim::compiler {
namespace {

// A leaf sharding the partitioner supports; maximal is treated as
// replicated (every device computes the value), unknown (a shard group
// marker nothing resolved) too. Manual and subgroup-manual leaves are kept.
Sharding supported_leaf(Sharding s, const Instruction&) {
  if (s.is_maximal() || s.is_unknown()) return Sharding::replicated();
  return s;
}

// The instruction's sharding; tuple-shaped values get one leaf per array leaf.
// An outfeed's annotation describes its data (custom_call_handler.cc), its
// own token value is replicated.
Sharding instruction_sharding(const Instruction& instr) {
  if (instr.opcode == Opcode::kOutfeed) return Sharding::replicated();
  Sharding s =
      instr.sharding ? parse_sharding(*instr.sharding, instr.location) : Sharding::replicated();
  s = s.without_group_and_metadata();
  if (!instr.shape.is_tuple()) {
    if (s.is_tuple() && s.tuple_elements().size() == 1) s = s.tuple_elements()[0];
    if (s.is_tuple())
      throw UserError(instr.location,
                      fmt::format("SPMD partitioner: tuple sharding on array '{}'", instr.name),
                      "");
    return supported_leaf(s, instr);
  }
  if (s.is_tuple() && static_cast<int64_t>(s.tuple_elements().size()) != instr.shape.leaf_count())
    throw UserError(
        instr.location,
        fmt::format("SPMD partitioner: tuple sharding of '{}' has {} leaves, the shape {}",
                    instr.name, s.tuple_elements().size(), instr.shape.leaf_count()),
        "");
  std::vector<Sharding> leaves;
  for (const Sharding& leaf : leaf_shardings(s, instr.shape))
    leaves.push_back(supported_leaf(leaf, instr));
  return Sharding::tuple(std::move(leaves));
}

PartitionedValue handle_parameter(SpmdContext& context, const Instruction& instr,
                                  const Sharding& target) {
  InstrId id = context.builder().parameter(instr.attrs.parameter_number,
                                           partitioned_shape(instr.shape, target), instr.name);
  context.builder().set_sharding(id, target.to_string());
  return PartitionedValue{id, instr.shape, target};
}

// Constant and iota: compute the whole value, then slice this device's tile.
PartitionedValue handle_full_value(SpmdContext& context, const Instruction& instr,
                                   const Sharding& target) {
  InstrId id = clone_with_operands(context, instr, {});
  return reshard(context, PartitionedValue{id, instr.shape, Sharding::replicated()}, target);
}

// Explicit replica groups over a tiled sharding with a manual subgroup: the
// case where a group may or may not stay inside one data tile.
bool groups_over_manual_subgroups(const Sharding& sharding, const ReplicaGroups& groups) {
  return sharding.is_tiled() && sharding.has_manual_subgroup() && !groups.is_all_devices();
}

// The first device of a non-empty `group` whose data tile of `sharding` is
// not group[0]'s, if any.
std::optional<int64_t> device_off_first_tile(const Sharding& sharding,
                                             const std::vector<int64_t>& group) {
  const auto first = sharding.tile_index_for_device(group[0]);
  for (int64_t device : group)
    if (sharding.tile_index_for_device(device) != first) return device;
  return std::nullopt;
}

// Every group's devices hold the same data tile of `sharding` (a tiled
// sharding with a manual subgroup; explicit groups).
bool groups_within_data_tiles(const Sharding& sharding, const ReplicaGroups& groups,
                              int64_t devices) {
  if (!groups_over_manual_subgroups(sharding, groups)) return false;
  for (const std::vector<int64_t>& group : groups.expand(devices))
    if (group.empty() || !sharding.tile_index_for_device(group[0]) ||
        device_off_first_tile(sharding, group))
      return false;
  return true;
}

// A collective written inside a partially manual region reduces over the
// manual dims: each of its groups must join devices of one data tile. XLA
// rejects a group across data tiles; so does podsim (it has no meaning there).
void check_manual_groups(const Instruction& collective, const Sharding& sharding, int64_t devices) {
  if (!groups_over_manual_subgroups(sharding, collective.attrs.replica_groups)) return;
  for (const std::vector<int64_t>& group : collective.attrs.replica_groups.expand(devices)) {
    if (group.empty()) continue;
    if (const std::optional<int64_t> device = device_off_first_tile(sharding, group))
      throw UserError(
          collective.location,
          fmt::format(
              "{} '{}': replica group {{{}}} joins devices {} and {} of different data tiles of "
              "{}; in a partially manual region a collective reduces over the manual dims only",
              opcode_name(collective.opcode), collective.name, fmt::join(group, ","), group[0],
              *device, sharding.to_string()),
          "group only devices that hold the same data tile (XLA's partitioner refuses this too)");
  }
}

PartitionedValue dispatch(SpmdContext& context, const HandlerInput& in) {
  const Opcode op = in.original.opcode;
  if (op == Opcode::kIota && in.original.shape.is_array() && in.original.shape.rank() > 0)
    return handle_iota(context, in);
  if (op == Opcode::kConstant)
    if (auto uniform = handle_uniform_constant(context, in)) return *uniform;
  if (op == Opcode::kConstant || op == Opcode::kIota)
    return handle_full_value(context, in.original, in.target);
  if (is_manual_region_entry(in.original)) return handle_manual_region_entry(context, in);
  if (is_manual_region_exit(in.original)) return handle_manual_region_exit(context, in);
  if (is_fully_manual(in.target) && op != Opcode::kWhile && op != Opcode::kCall &&
      op != Opcode::kConditional && op != Opcode::kTuple && op != Opcode::kGetTupleElement)
    return handle_manual_op(context, in);
  if (is_elementwise(op) || op == Opcode::kConvert) return handle_elementwise(context, in);
  if (is_sharding_annotation(in.original)) return handle_sharding_annotation(context, in);
  switch (op) {
    case Opcode::kCustomCall:
      return handle_custom_call(context, in);
    case Opcode::kAllReduce:
      // replica_groups={} without channel_id / use_global_device_ids is a
      // cross-replica all-reduce: each partition's values are reduced with
      // the same partition of the other replicas, so it is local to the
      // partition (XLA leaves it alone); any other all-reduce is whole.
      if (in.original.attrs.replica_groups.is_all_devices() && !in.original.attrs.channel_id &&
          !in.original.attrs.use_global_device_ids && in.original.shape.is_array())
        return handle_elementwise(context, in);
      // In a partially manual region, groups that join only devices holding
      // the same data tile reduce over the manual dims: local on the shard.
      if (groups_within_data_tiles(in.target, in.original.attrs.replica_groups,
                                   context.num_devices()))
        return handle_elementwise(context, in);
      check_manual_groups(in.original, in.target, context.num_devices());
      return handle_default(context, in);
    case Opcode::kBitcast:
      return handle_reshape(context, in);
    case Opcode::kStochasticConvert:
      return handle_elementwise(context, in);
    case Opcode::kBitcastConvert:
      // Same element width: elementwise; otherwise a dim appears or goes.
      if (in.original.shape.is_array() &&
          in.operands.at(0).base_shape.dims() == in.original.shape.dims())
        return handle_elementwise(context, in);
      return handle_default(context, in);
    case Opcode::kSort:
      return handle_sort_like(
          context, in, in.original.attrs.dimensions.empty() ? 0 : in.original.attrs.dimensions[0]);
    case Opcode::kTopK:
      return handle_sort_like(context, in, in.operands.at(0).base_shape.rank() - 1);
    case Opcode::kOptimizationBarrier:
    case Opcode::kAddDependency:
    case Opcode::kAfterAll:
    case Opcode::kRng:
    case Opcode::kRngGetAndUpdateState:
      return handle_local_op(context, in);
    case Opcode::kBroadcast:
      return handle_broadcast(context, in);
    case Opcode::kTranspose:
      return handle_transpose(context, in);
    case Opcode::kReshape:
      return handle_reshape(context, in);
    case Opcode::kReduce:
      return handle_reduce(context, in);
    case Opcode::kDot:
      return handle_dot(context, in);
    case Opcode::kConvolution:
      return handle_convolution(context, in);
    case Opcode::kReduceWindow:
      return handle_reduce_window(context, in);
    case Opcode::kSlice:
      return handle_slice(context, in);
    case Opcode::kPad:
      return handle_pad(context, in);
    case Opcode::kReverse:
      return handle_reverse(context, in);
    case Opcode::kConcatenate:
      return handle_concatenate(context, in);
    case Opcode::kDynamicSlice:
      return handle_dynamic_slice(context, in);
    case Opcode::kDynamicUpdateSlice:
      return handle_dynamic_update_slice(context, in);
    case Opcode::kGather:
      return handle_gather(context, in);
    case Opcode::kScatter:
      return handle_scatter(context, in);
    case Opcode::kTuple:
      return handle_tuple(context, in);
    case Opcode::kGetTupleElement:
      return handle_get_tuple_element(context, in);
    case Opcode::kWhile:
      return handle_while(context, in);
    case Opcode::kCall:
      return handle_call(context, in);
    case Opcode::kConditional:
      return handle_conditional(context, in);
    case Opcode::kOutfeed:
      return handle_outfeed(context, in);
    case Opcode::kInfeed:
      return handle_infeed(context, in);
    default:
      return handle_default(context, in);
  }
}

void count_collectives(const Computation& computation, SpmdStats& stats) {
  for (const Instruction& instr : computation.instructions()) stats.count_collective(instr.opcode);
}

}  // namespace

void SpmdStats::count_collective(Opcode op) {
  switch (op) {
    case Opcode::kAllReduce:
      ++all_reduces;
      break;
    case Opcode::kAllGather:
      ++all_gathers;
      break;
    case Opcode::kAllToAll:
      ++all_to_alls;
      break;
    case Opcode::kCollectivePermute:
      ++collective_permutes;
      break;
    case Opcode::kReduceScatter:
      ++reduce_scatters;
      break;
    default:
      break;
  }
}

PartitionedValue partition_computation(SpmdContext& context, const Computation& computation,
                                       const ComputationSignature& signature) {
  const int64_t devices = context.num_devices();
  std::vector<PartitionedValue> values(static_cast<size_t>(computation.size()));
  std::vector<int64_t> einsum_readers(static_cast<size_t>(computation.size()), 0);
  for (const Instruction& instr : computation.instructions())
    if (instr.opcode == Opcode::kDot || instr.opcode == Opcode::kConvolution)
      for (InstrId operand : std::set<InstrId>(instr.operands.begin(), instr.operands.end()))
        ++einsum_readers[static_cast<size_t>(operand)];
  context.set_einsum_readers(std::move(einsum_readers));
  for (InstrId id = 0; id < computation.size(); ++id) {
    const Instruction& instr = computation.instr(id);
    Sharding target = instruction_sharding(instr);
    const auto number = static_cast<size_t>(instr.attrs.parameter_number);
    if (instr.opcode == Opcode::kParameter && number < signature.parameter_shardings.size())
      target = signature.parameter_shardings[number];
    // Everything emitted for this instruction carries its model-level name.
    context.builder().set_op_name_scope(instr.op_name.empty() ? instr.name : instr.op_name);
    if (instr.shape.is_array()) {
      target.validate(instr.shape.rank(), devices, instr.location);
    } else {
      std::vector<int64_t> ranks;
      for (const Shape* leaf : instr.shape.leaves()) ranks.push_back(leaf->rank());
      target.validate_leaves(ranks, devices, instr.location);
    }
    if (instr.opcode == Opcode::kParameter) {
      values[static_cast<size_t>(id)] = handle_parameter(context, instr, target);
      continue;
    }
    std::vector<PartitionedValue> operands;
    for (InstrId operand : instr.operands) operands.push_back(values[static_cast<size_t>(operand)]);
    values[static_cast<size_t>(id)] = dispatch(context, HandlerInput{instr, operands, target});
    [[maybe_unused]] const PartitionedValue& v = values[static_cast<size_t>(id)];
    context.builder().mutable_instr(v.id).global_sharding = target.to_string();
    assert(v.sharding == target);
    assert(context.local_shape(v.id) == partitioned_shape(instr.shape, target));
  }
  PartitionedValue root = values[static_cast<size_t>(computation.root())];
  if (signature.root_sharding) root = reshard(context, root, *signature.root_sharding);
  return root;
}

namespace {
// Every collective with a channel id gets its own, as XLA's partitioner
// numbers them (after any send/recv channel, which keep theirs).
void number_channels(Module& module) {
  int64_t next = 1;
  for (const Computation& c : module.computations())
    for (const Instruction& in : c.instructions())
      if (in.attrs.channel_id && !is_collective(in.opcode) && !is_async_start(in.opcode))
        next = std::max(next, *in.attrs.channel_id + 1);
  for (CompId id = 0; id < module.computation_count(); ++id) {
    Computation& c = module.mutable_computation(id);
    for (InstrId i = 0; i < c.size(); ++i) {
      Instruction& in = c.mutable_instr(i);
      if (in.attrs.channel_id && (is_collective(in.opcode) || is_async_start(in.opcode)))
        in.attrs.channel_id = next++;
    }
  }
}
}  // namespace

SpmdResult partition_spmd_with_stats(const Module& annotated, const SpmdOptions& options) {
  const int64_t devices =
      options.num_partitions > 0 ? options.num_partitions : annotated.num_partitions();
  SpmdResult out;
  Module& result = out.module;
  result = annotated;  // copies every computation (same ids); the entry is replaced below
  result.set_num_partitions(devices);
  const Computation& entry = annotated.entry();

  SpmdContext context(&result, devices);
  context.set_source_module(&annotated);
  context.set_options(options);
  const PartitionedValue root = partition_computation(context, entry, ComputationSignature{});
  const std::string entry_name = entry.name();
  context.builder().set_sharding(root.id, root.sharding.to_string());
  Computation built = std::move(context.builder()).build(root.id);
  built.set_name(entry_name);
  result.mutable_computation(result.entry_id()) = std::move(built);
  out.stats = context.stats();
  for (const Computation& computation : result.computations())
    count_collectives(computation, out.stats);
  number_channels(result);
  return out;
}

Module partition_spmd(const Module& annotated, const SpmdOptions& options) {
  return partition_spmd_with_stats(annotated, options).module;
}

}  // namespace podsim::compiler
