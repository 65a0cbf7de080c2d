// Per-op handlers of the partitioner (internal). Each reads the partitioned
// operands, reshards them as the op needs, emits per-device HLO and returns
// the result as a PartitionedValue in `target` (the instruction's sharding).
#pragma once

#include <vector>

#include "compiler/spmd/reshard.h"

namespace podsim::compiler {

struct HandlerInput {
  const Instruction& original;
  const std::vector<PartitionedValue>& operands;  // partitioned operands, in order
  const Sharding& target;
};

// Clones `original` with new operands and lets shape inference set the shape.
InstrId clone_with_operands(SpmdContext& context, const Instruction& original, std::vector<InstrId> operands);

PartitionedValue handle_elementwise(SpmdContext& context, const HandlerInput& in);
PartitionedValue handle_broadcast(SpmdContext& context, const HandlerInput& in);
PartitionedValue handle_transpose(SpmdContext& context, const HandlerInput& in);
PartitionedValue handle_reshape(SpmdContext& context, const HandlerInput& in);
PartitionedValue handle_reduce(SpmdContext& context, const HandlerInput& in);
PartitionedValue handle_dot(SpmdContext& context, const HandlerInput& in);
// Replicate every operand, run the whole op, reshard the result.
PartitionedValue handle_default(SpmdContext& context, const HandlerInput& in);

}  // namespace podsim::compiler
