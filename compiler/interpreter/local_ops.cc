// Dispatch of per-device ops to their family implementations, plus the small
// ops that need no family: constant, tuple, get-tuple-element, partition-id,
// replica-id and the identity custom-calls.
#include "compiler/interpreter/local_ops.h"

#include <cassert>

#include <fmt/format.h>

#include "compiler/ir/flash_attention.h"

namespace podsim::compiler::interp {

void fail(const Instruction& instr, const std::string& message) {
  throw UserError(instr.location,
                  fmt::format("{} '{}': {}", opcode_name(instr.opcode), instr.name, message));
}

namespace {

void expect_operands(const Instruction& instr, const Operands& operands, size_t count) {
  if (operands.size() != count)
    fail(instr, fmt::format("has {} operands, expected {}", operands.size(), count));
}

// Sharding annotations, the manual-sharding markers and the host-offloading
// moves (MoveToHost / MoveToDevice: the same value in another memory) do not
// change values.
bool is_identity_custom_call(const std::string& target) {
  return target == "Sharding" || target == "SPMDFullToShardShape" ||
         target == "SPMDShardToFullShape" || target == kStopGradientTarget ||
         target == "MoveToHost" || target == "MoveToDevice";
}

// Ops whose operands and result may be tuples; every other op works on arrays.
bool handles_tuples(Opcode op) {
  switch (op) {
    case Opcode::kTuple:
    case Opcode::kGetTupleElement:
    case Opcode::kCustomCall:
    case Opcode::kConstant:
    case Opcode::kReduce:
    case Opcode::kReduceWindow:
    case Opcode::kScatter:
    case Opcode::kOptimizationBarrier:
    case Opcode::kDomain:
    case Opcode::kAddDependency:
    case Opcode::kAfterAll:
    case Opcode::kSort:
    case Opcode::kTopK:
    case Opcode::kBatchNormTraining:
    case Opcode::kBatchNormGrad:
      return true;
    default:
      return false;
  }
}

}  // namespace

Literal evaluate_local_op(const Instruction& instr, const Operands& operands,
                          const OpContext& context) {
  if (!handles_tuples(instr.opcode)) {
    if (instr.shape.is_tuple()) fail(instr, "result must be an array");
    for (const Literal* op : operands)
      if (op->is_tuple()) fail(instr, "operands must be arrays");
  }
  switch (instr.opcode) {
    case Opcode::kConstant:
      if (!instr.attrs.literal) fail(instr, "constant without a value");
      if (!(instr.attrs.literal->shape() == instr.shape))
        fail(instr, "constant value does not match its shape");
      return *instr.attrs.literal;
    case Opcode::kIota:
      return eval_iota(instr);
    case Opcode::kBroadcast:
      expect_operands(instr, operands, 1);
      return eval_broadcast(instr, *operands[0]);
    case Opcode::kReshape:
      expect_operands(instr, operands, 1);
      return eval_reshape(instr, *operands[0]);
    case Opcode::kTranspose:
      expect_operands(instr, operands, 1);
      return eval_transpose(instr, *operands[0]);
    case Opcode::kSlice:
      expect_operands(instr, operands, 1);
      return eval_slice(instr, *operands[0]);
    case Opcode::kPad:
      expect_operands(instr, operands, 2);
      return eval_pad(instr, *operands[0], *operands[1]);
    case Opcode::kConcatenate:
      return eval_concatenate(instr, operands);
    case Opcode::kReverse:
      expect_operands(instr, operands, 1);
      return eval_reverse(instr, *operands[0]);
    case Opcode::kDynamicSlice:
      return eval_dynamic_slice(instr, operands);
    case Opcode::kDynamicUpdateSlice:
      return eval_dynamic_update_slice(instr, operands);
    case Opcode::kSelect:
      expect_operands(instr, operands, 3);
      return eval_select(instr, *operands[0], *operands[1], *operands[2]);
    case Opcode::kClamp:
      expect_operands(instr, operands, 3);
      return eval_clamp(instr, *operands[0], *operands[1], *operands[2]);
    case Opcode::kReduce:
      return eval_reduce(instr, operands, context);
    case Opcode::kReduceWindow:
      return eval_reduce_window(instr, operands, context);
    case Opcode::kDot:
      if (operands.size() == 3)
        return eval_sparse_dot(instr, *operands[0], *operands[1], *operands[2]);
      expect_operands(instr, operands, 2);
      return eval_dot(instr, *operands[0], *operands[1]);
    case Opcode::kConvolution:
      expect_operands(instr, operands, 2);
      return eval_convolution(instr, *operands[0], *operands[1]);
    case Opcode::kGather:
      expect_operands(instr, operands, 2);
      return eval_gather(instr, *operands[0], *operands[1]);
    case Opcode::kScatter:
      return eval_scatter(instr, operands, context);
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
      return Literal(
          instr.shape,
          {instr.opcode == Opcode::kPartitionId ? static_cast<double>(context.partition_id) : 0.0});
    // Value-preserving ops: barriers, domains, dependencies, static dynamic sizes.
    case Opcode::kOptimizationBarrier:
    case Opcode::kDomain:
      expect_operands(instr, operands, 1);
      return *operands[0];
    case Opcode::kAddDependency:
    case Opcode::kSetDimensionSize:
      if (operands.empty()) fail(instr, "needs an operand");
      return *operands[0];
    case Opcode::kAfterAll:
      return Literal(instr.shape);  // a token: no value
    case Opcode::kGetDimensionSize: {
      expect_operands(instr, operands, 1);
      const auto& dims = instr.attrs.dimensions;
      if (dims.size() != 1 || dims[0] < 0 || dims[0] >= operands[0]->shape().rank())
        fail(instr, "needs one dimension within the operand's rank");
      return Literal(instr.shape,
                     {static_cast<double>(operands[0]->shape().dim(static_cast<int>(dims[0])))});
    }
    case Opcode::kDynamicReshape:
      if (operands.empty()) fail(instr, "needs an operand");
      return eval_reshape(instr, *operands[0]);  // static sizes: a row-major reshape
    case Opcode::kBitcast:
      expect_operands(instr, operands, 1);
      return eval_bitcast(instr, *operands[0]);
    case Opcode::kBitcastConvert:
      expect_operands(instr, operands, 1);
      return eval_bitcast_convert(instr, *operands[0]);
    case Opcode::kSort:
      return eval_sort(instr, operands, context);
    case Opcode::kTopK:
      expect_operands(instr, operands, 1);
      return eval_topk(instr, *operands[0], context);
    case Opcode::kFft:
      expect_operands(instr, operands, 1);
      return eval_fft(instr, *operands[0]);
    case Opcode::kMap:
      return eval_map(instr, operands, context);
    case Opcode::kSelectAndScatter:
      return eval_select_and_scatter(instr, operands, context);
    case Opcode::kCholesky:
      expect_operands(instr, operands, 1);
      return eval_cholesky(instr, *operands[0]);
    case Opcode::kTriangularSolve:
      expect_operands(instr, operands, 2);
      return eval_triangular_solve(instr, *operands[0], *operands[1]);
    case Opcode::kBatchNormTraining:
    case Opcode::kBatchNormInference:
    case Opcode::kBatchNormGrad:
      return eval_batch_norm(instr, operands);
    case Opcode::kCustomCall: {
      if (instr.attrs.custom_call_target == "TopK") {
        expect_operands(instr, operands, 1);
        return eval_topk(instr, *operands[0], context);
      }
      if (is_flash_attention(instr)) return eval_flash_attention(instr, operands);
      if (is_flash_attention_bwd(instr)) return eval_flash_attention_bwd(instr, operands);
      if (!is_identity_custom_call(instr.attrs.custom_call_target))
        fail(instr, fmt::format("custom-call target '{}' is not supported by the interpreter",
                                instr.attrs.custom_call_target));
      expect_operands(instr, operands, 1);
      if (!(operands[0]->shape() == instr.shape))
        fail(instr,
             fmt::format("custom-call '{}' changes the shape {} -> {}",
                         instr.attrs.custom_call_target, operands[0]->shape().to_string(false),
                         instr.shape.to_string(false)));
      return *operands[0];
    }
    default:
      break;
  }
  if (is_elementwise_unary(instr.opcode)) {
    expect_operands(instr, operands, 1);
    return eval_unary(instr, *operands[0]);
  }
  if (is_elementwise_binary(instr.opcode)) {
    expect_operands(instr, operands, 2);
    return eval_binary(instr, *operands[0], *operands[1]);
  }
  fail(instr, "is not supported by the interpreter");
}

}  // namespace podsim::compiler::interp
