// Mode of an HLO module (module_mode.h): the evidence, the decision and the
// device count.
#include "compiler/module_mode.h"

#include <algorithm>

#include <fmt/format.h>

#include "compiler/sharding/sharding.h"

namespace podsim::compiler {

namespace {

bool is_global_marker(const std::string& target) {
  return target == "Sharding" || target == "SPMDFullToShardShape" ||
         target == "SPMDShardToFullShape" || target.starts_with("xla.sdy.");
}

bool is_async_collective(const Instruction& instr) {
  if (const auto wrapped = async_wrapped_opcode(instr.opcode))
    return is_collective(*wrapped) && is_async_start(instr.opcode);
  return instr.opcode == Opcode::kAsyncStart && instr.attrs.async_wrapped &&
         is_collective(*instr.attrs.async_wrapped);
}

// Largest device id a sharding names (tiles' devices, a maximal device), or -1.
int64_t largest_device(const Sharding& sharding) {
  if (sharding.is_tuple()) {
    int64_t largest = -1;
    for (const Sharding& leaf : sharding.tuple_elements())
      largest = std::max(largest, largest_device(leaf));
    return largest;
  }
  if (sharding.is_maximal()) return sharding.unique_device().value_or(-1);
  if (!sharding.is_tiled()) return -1;
  const std::vector<int64_t> devices = sharding.tile_assignment().to_vector();
  return devices.empty() ? -1 : *std::max_element(devices.begin(), devices.end());
}

int64_t largest_device(const ReplicaGroups& groups) {
  if (groups.iota) return groups.iota->num_groups * groups.iota->group_size - 1;
  int64_t largest = -1;
  for (const auto& group : groups.explicit_groups)
    for (int64_t d : group) largest = std::max(largest, d);
  return largest;
}

}  // namespace

const char* module_mode_name(ModuleMode mode) {
  return mode == ModuleMode::kAsIs ? "as-is" : "partition";
}

std::optional<ModuleMode> parse_module_mode(const std::string& text) {
  if (text == "partition") return ModuleMode::kPartition;
  if (text == "as-is") return ModuleMode::kAsIs;
  if (text == "auto" || text.empty()) return std::nullopt;
  throw UserError(SourceLocation{"--mode " + text, 0, 0}, fmt::format("unknown mode '{}'", text),
                  "--mode is auto, partition (a global program to partition) or as-is (one "
                  "per-device program)");
}

ModeEvidence collect_mode_evidence(const Module& module) {
  ModeEvidence e;
  const Computation& entry = module.entry();
  if (entry.name().ends_with("_spmd"))
    e.per_device.push_back(
        {fmt::format("entry computation '{}' (XLA's SPMD partitioner names its output so)",
                     entry.name()),
         entry.size() > 0 ? entry.instr(0).location : SourceLocation{}});
  if (module.is_scheduled())
    e.per_device.push_back(
        {"is_scheduled=true (an optimized, scheduled program)", SourceLocation{}});
  for (const Computation& comp : module.computations()) {
    for (const Instruction& instr : comp.instructions()) {
      const std::string_view op = opcode_name(instr.opcode);
      if (instr.opcode == Opcode::kFusion) {
        e.per_device.push_back(
            {fmt::format("fusion '{}' (XLA's fusion runs after partitioning)", instr.name),
             instr.location});
      } else if (is_async_collective(instr)) {
        e.per_device.push_back({fmt::format("asynchronous collective '{}' (XLA splits collectives "
                                            "into start/done after partitioning)",
                                            instr.name),
                                instr.location});
      } else if (instr.opcode == Opcode::kPartitionId || instr.opcode == Opcode::kReplicaId) {
        e.per_device_weak.push_back({fmt::format("{} '{}'", op, instr.name), instr.location});
      } else if ((is_collective(instr.opcode) || is_async_start(instr.opcode)) &&
                 instr.attrs.channel_id) {
        e.per_device_weak.push_back(
            {fmt::format("{} '{}' with channel_id={}", op, instr.name, *instr.attrs.channel_id),
             instr.location});
      } else if (instr.opcode == Opcode::kCustomCall &&
                 is_global_marker(instr.attrs.custom_call_target)) {
        e.global.push_back(
            {fmt::format("custom-call '{}' to {} (a marker the partitioner consumes)", instr.name,
                         instr.attrs.custom_call_target),
             instr.location});
      } else if (instr.attrs.frontend_attributes.find("xla.sdy.sharding") != std::string::npos) {
        e.global.push_back(
            {fmt::format("'{}' carries a Shardy sharding (xla.sdy.sharding)", instr.name),
             instr.location});
      }
    }
  }
  return e;
}

ModuleMode decide_module_mode(const Module& module) {
  const ModeEvidence e = collect_mode_evidence(module);
  if (!e.global.empty() && !e.per_device.empty()) {
    const ModeSignal& global = e.global.front();
    const ModeSignal& local = e.per_device.front();
    const std::string at_local = local.where.known() ? " at " + local.where.to_string() : "";
    throw UserError(
        global.where,
        fmt::format("the module looks both global and per-device: {} ({} such), but {}{} ({} such)",
                    global.what, e.global.size(), local.what, at_local, e.per_device.size()),
        "say which it is: --mode partition (propagate and partition it) or --mode as-is (simulate "
        "it as "
        "one per-device program)");
  }
  if (!e.global.empty()) return ModuleMode::kPartition;
  if (!e.per_device.empty() || !e.per_device_weak.empty()) return ModuleMode::kAsIs;
  return ModuleMode::kPartition;
}

int64_t infer_device_count(const Module& module) {
  if (module.num_partitions() > 1) return module.num_partitions();
  if (module.replica_count() > 1) return module.replica_count();
  int64_t largest = -1;
  for (const Computation& comp : module.computations()) {
    for (const Instruction& instr : comp.instructions()) {
      if (instr.sharding)
        largest =
            std::max(largest, largest_device(parse_sharding(*instr.sharding, instr.location)));
      largest = std::max(largest, largest_device(instr.attrs.replica_groups));
      for (const auto& [source, target] : instr.attrs.source_target_pairs)
        largest = std::max({largest, source, target});
    }
  }
  return largest + 1 > 1 ? largest + 1 : 1;
}

}  // namespace podsim::compiler
