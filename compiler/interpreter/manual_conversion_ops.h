// SPMDFullToShardShape / SPMDShardToFullShape where they change the shape
// (an unpartitioned module's entry into and exit from manual partitioning):
// a per-device meaning that needs every device's value, so the Evaluator
// runs them across lanes like a collective. Internal to the interpreter.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/interpreter/local_ops.h"

namespace podsim::compiler::interp {

bool is_manual_conversion(const Instruction& instr);

// per_lane[l] holds lane l's operand; lane l is device partition_ids[l].
// Device d's part of the automatic-side value (its region under that side's
// sharding) is its part of the manual-side value (its region under the
// manual side's sharding); each manual group's value is assembled from its
// devices' parts (zero where a tile runs past an uneven end). Needs every
// device the shardings use.
std::vector<Literal> eval_manual_conversion(const Instruction& instr, const Instruction& operand,
                                            const std::vector<Operands>& per_lane,
                                            const std::vector<int64_t>& partition_ids);

}  // namespace podsim::compiler::interp
