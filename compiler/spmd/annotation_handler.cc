// custom-call "Sharding" (and Shardy's xla.sdy.ShardingConstraint /
// xla.sdy.FuncResultSharding) (docs/reference/gspmd.md#pre-processing, #per-op-partitioning): a
// user annotation in the middle of the graph. Partitioned as XLA does: the operand is resharded to
// the annotation's sharding and passed through locally — no op is emitted beyond the reshard steps
// themselves.
#include "compiler/sharding/shardy.h"
#include "compiler/spmd/spmd_handlers.h"

namespace podsim::compiler {

bool is_sharding_annotation(const Instruction& instr) {
  return instr.opcode == Opcode::kCustomCall &&
         is_sharding_custom_call_target(instr.attrs.custom_call_target) &&
         instr.operand_count() == 1;
}

PartitionedValue handle_sharding_annotation(SpmdContext& context, const HandlerInput& in) {
  return reshard(context, in.operands.at(0), in.target);
}

}  // namespace podsim::compiler
