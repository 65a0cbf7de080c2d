// Collectives across the simulated devices: all-reduce, all-gather,
// reduce-scatter, all-to-all and collective-permute. The evaluator runs all
// devices in lock-step, so a collective sees every device's operand values at
// once and produces every device's result. Internal to the interpreter.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "compiler/interpreter/local_ops.h"

namespace podsim::compiler::interp {

struct CollectiveContext {
  const Module& module;
  int64_t num_devices = 1;
  // Lane l runs device partition_ids[l]; collectives need every device.
  const std::vector<int64_t>& partition_ids;
  std::function<const ScalarFunction&(CompId, int64_t partition_id)> combiner;
};

// operands_per_lane[l] = the instruction's operands on lane l; returns the
// result per lane.
std::vector<Literal> evaluate_collective(const Instruction& instr,
                                         const std::vector<Operands>& operands_per_lane,
                                         const CollectiveContext& context);

}  // namespace podsim::compiler::interp
