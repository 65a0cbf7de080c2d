// Dispatch of per-device ops to their family implementations, plus the small
// ops that need no family: constant, tuple, get-tuple-element, partition-id,
// replica-id and the identity custom-calls.
#include "compiler/interpreter/local_ops.h"

#include <cassert>

#include <fmt/format.h>

namespace podsim::compiler::interp {

void fail(const Instruction& instr, const std::string& message) {
  throw UserError(instr.location, fmt::format("{} '{}': {}", opcode_name(instr.opcode), instr.name, message));
}

namespace {

void expect_operands(const Instruction& instr, const Operands& operands, size_t count) {
  if (operands.size() != count)
    fail(instr, fmt::format("has {} operands, expected {}", operands.size(), count));
}

// Sharding annotations and the manual-sharding markers do not change values.
bool is_identity_custom_call(const std::string& target) {
  return target == "Sharding" || target == "SPMDFullToShardShape" || target == "SPMDShardToFullShape" ||
         target == kStopGradientTarget;
}

// Ops whose operands and result may be tuples; every other op works on arrays.
bool handles_tuples(Opcode op) {
  return op == Opcode::kTuple || op == Opcode::kGetTupleElement || op == Opcode::kCustomCall ||
         op == Opcode::kConstant || op == Opcode::kReduce || op == Opcode::kReduceWindow || op == Opcode::kScatter;
}

}  // namespace

Literal evaluate_local_op(const Instruction& instr, const Operands& operands, const OpContext& context) {
  if (!handles_tuples(instr.opcode)) {
    if (instr.shape.is_tuple()) fail(instr, "result must be an array");
    for (const Literal* op : operands)
      if (op->is_tuple()) fail(instr, "operands must be arrays");
  }
  switch (instr.opcode) {
    case Opcode::kConstant:
      if (!instr.attrs.literal) fail(instr, "constant without a value");
      if (!(instr.attrs.literal->shape() == instr.shape)) fail(instr, "constant value does not match its shape");
      return *instr.attrs.literal;
    case Opcode::kIota: return eval_iota(instr);
    case Opcode::kBroadcast: expect_operands(instr, operands, 1); return eval_broadcast(instr, *operands[0]);
    case Opcode::kReshape: expect_operands(instr, operands, 1); return eval_reshape(instr, *operands[0]);
    case Opcode::kTranspose: expect_operands(instr, operands, 1); return eval_transpose(instr, *operands[0]);
    case Opcode::kSlice: expect_operands(instr, operands, 1); return eval_slice(instr, *operands[0]);
    case Opcode::kPad: expect_operands(instr, operands, 2); return eval_pad(instr, *operands[0], *operands[1]);
    case Opcode::kConcatenate: return eval_concatenate(instr, operands);
    case Opcode::kReverse: expect_operands(instr, operands, 1); return eval_reverse(instr, *operands[0]);
    case Opcode::kDynamicSlice: return eval_dynamic_slice(instr, operands);
    case Opcode::kDynamicUpdateSlice: return eval_dynamic_update_slice(instr, operands);
    case Opcode::kSelect:
      expect_operands(instr, operands, 3);
      return eval_select(instr, *operands[0], *operands[1], *operands[2]);
    case Opcode::kClamp:
      expect_operands(instr, operands, 3);
      return eval_clamp(instr, *operands[0], *operands[1], *operands[2]);
    case Opcode::kReduce: return eval_reduce(instr, operands, context);
    case Opcode::kReduceWindow: return eval_reduce_window(instr, operands, context);
    case Opcode::kDot: expect_operands(instr, operands, 2); return eval_dot(instr, *operands[0], *operands[1]);
    case Opcode::kConvolution:
      expect_operands(instr, operands, 2);
      return eval_convolution(instr, *operands[0], *operands[1]);
    case Opcode::kGather: expect_operands(instr, operands, 2); return eval_gather(instr, *operands[0], *operands[1]);
    case Opcode::kScatter: return eval_scatter(instr, operands, context);
    case Opcode::kTuple: {
      std::vector<Literal> elements;
      for (const Literal* op : operands) elements.push_back(*op);
      return Literal::tuple(std::move(elements));
    }
    case Opcode::kGetTupleElement: {
      expect_operands(instr, operands, 1);
      const Literal& tuple = *operands[0];
      const int64_t index = instr.attrs.tuple_index;
      if (!tuple.is_tuple() || index < 0 || index >= static_cast<int64_t>(tuple.elements().size()))
        fail(instr, fmt::format("tuple index {} out of range", index));
      return tuple.element(static_cast<int>(index));
    }
    case Opcode::kPartitionId:
    case Opcode::kReplicaId:
      if (!instr.shape.is_scalar()) fail(instr, "result must be a scalar");
      return Literal(instr.shape, {instr.opcode == Opcode::kPartitionId ? static_cast<double>(context.partition_id) : 0.0});
    case Opcode::kCustomCall: {
      if (!is_identity_custom_call(instr.attrs.custom_call_target))
        fail(instr, fmt::format("custom-call target '{}' is not supported by the interpreter",
                                instr.attrs.custom_call_target));
      expect_operands(instr, operands, 1);
      if (!(operands[0]->shape() == instr.shape))
        fail(instr, fmt::format("custom-call '{}' changes the shape {} -> {}", instr.attrs.custom_call_target,
                                operands[0]->shape().to_string(false), instr.shape.to_string(false)));
      return *operands[0];
    }
    default: break;
  }
  if (is_elementwise_unary(instr.opcode)) {
    expect_operands(instr, operands, 1);
    return eval_unary(instr, *operands[0]);
  }
  if (is_elementwise_binary(instr.opcode)) {
    expect_operands(instr, operands, 2);
    return eval_binary(instr, *operands[0], *operands[1]);
  }
  fail(instr, "not a per-device op (internal dispatch error)");
}

}  // namespace podsim::compiler::interp
