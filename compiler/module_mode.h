// Is an HLO module a global program to partition, or one per-device program
// to run as it is? XLA's SPMD partitioner leaves marks on what it emits
// (docs/hlo-input.md lists them with their sources), and consumes the
// markers a global program carries; the mode follows from which are there.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/module.h"

namespace podsim::compiler {

enum class ModuleMode : uint8_t { kPartition, kAsIs };
const char* module_mode_name(ModuleMode mode);  // "partition" | "as-is"
// "partition" | "as-is" | "auto" (nullopt); UserError otherwise.
std::optional<ModuleMode> parse_module_mode(const std::string& text);

// One observation, e.g. "entry computation 'main.40_spmd' (XLA's SPMD
// partitioner names its output so)", with where it is.
struct ModeSignal {
  std::string what;
  SourceLocation where;
};

struct ModeEvidence {
  // Only a partitioned (or optimized) program has these: the entry renamed
  // "*_spmd", is_scheduled=true, fusion instructions, asynchronous
  // collective pairs (all-gather-start, ...).
  std::vector<ModeSignal> per_device;
  // Also found inside a global program's manual (shard_map) regions:
  // partition-id / replica-id, collectives with a channel_id.
  std::vector<ModeSignal> per_device_weak;
  // A global program's markers the partitioner consumes: custom-calls
  // Sharding, SPMDFullToShardShape / SPMDShardToFullShape, xla.sdy.*.
  std::vector<ModeSignal> global;
};

ModeEvidence collect_mode_evidence(const Module& module);

// The mode of `module`: global markers -> partition; otherwise any
// per-device signal -> as-is; nothing -> partition. A module with both
// global markers and strong per-device signals is a UserError naming one
// of each, with a hint to pass --mode.
ModuleMode decide_module_mode(const Module& module);

// The devices a module runs on: num_partitions (or replica_count) of its
// HloModule line when above 1; else the largest device id its shardings
// and collectives name, plus one; else 1.
int64_t infer_device_count(const Module& module);

}  // namespace podsim::compiler
