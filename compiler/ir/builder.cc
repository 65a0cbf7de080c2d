// ComputationBuilder: appends instructions with inferred shapes.
#include "compiler/ir/builder.h"

#include <fmt/format.h>

#include "compiler/ir/shape_inference.h"

namespace podsim::compiler {

ComputationBuilder::ComputationBuilder(std::string name, const Module* module)
    : computation_(std::move(name)), module_(module) {}

std::string ComputationBuilder::fresh_name(Opcode op) {
  return fmt::format("{}.{}", opcode_name(op), next_name_++);
}

InstrId ComputationBuilder::add(Instruction instr) {
  if (instr.name.empty()) instr.name = fresh_name(instr.opcode);
  if (instr.op_name.empty()) instr.op_name = op_name_scope_;
  return computation_.append(std::move(instr));
}

InstrId ComputationBuilder::add_inferred(Instruction instr) {
  std::vector<const Shape*> shapes;
  shapes.reserve(instr.operands.size());
  for (InstrId op : instr.operands) shapes.push_back(&shape(op));
  ShapeInferenceContext ctx;
  ctx.module = module_;
  if (module_) ctx.num_devices = module_->num_partitions();
  instr.shape = infer_shape(instr, shapes, ctx);
  return add(std::move(instr));
}

InstrId ComputationBuilder::make(Opcode op, std::vector<InstrId> operands, Attributes attrs,
                                 std::vector<CompId> called) {
  Instruction instr;
  instr.opcode = op;
  instr.operands = std::move(operands);
  instr.attrs = std::move(attrs);
  instr.called = std::move(called);
  return add_inferred(std::move(instr));
}

void ComputationBuilder::set_sharding(InstrId id, std::string sharding_text) {
  computation_.mutable_instr(id).sharding = std::move(sharding_text);
}

void ComputationBuilder::set_op_name(InstrId id, std::string op_name) {
  computation_.mutable_instr(id).op_name = std::move(op_name);
}

InstrId ComputationBuilder::parameter(int64_t number, Shape shape, std::string name) {
  Instruction instr;
  instr.opcode = Opcode::kParameter;
  instr.name = name.empty() ? fmt::format("param.{}", number) : std::move(name);
  instr.shape = std::move(shape);
  instr.attrs.parameter_number = number;
  return add(std::move(instr));
}

InstrId ComputationBuilder::constant(Literal literal) {
  Instruction instr;
  instr.opcode = Opcode::kConstant;
  instr.shape = literal.shape();
  instr.attrs.literal = std::move(literal);
  return add_inferred(std::move(instr));
}

InstrId ComputationBuilder::scalar_constant(DType dtype, double value) {
  return constant(Literal::scalar(dtype, value));
}

InstrId ComputationBuilder::iota(Shape shape, int64_t iota_dimension) {
  Instruction instr;
  instr.opcode = Opcode::kIota;
  instr.shape = std::move(shape);
  instr.attrs.iota_dimension = iota_dimension;
  return add_inferred(std::move(instr));
}

InstrId ComputationBuilder::broadcast(InstrId operand, std::vector<int64_t> out_dims,
                                      std::vector<int64_t> dimensions) {
  Instruction instr;
  instr.opcode = Opcode::kBroadcast;
  instr.operands = {operand};
  instr.shape = Shape(shape(operand).dtype(), std::move(out_dims));
  instr.attrs.dimensions = std::move(dimensions);
  return add_inferred(std::move(instr));
}

InstrId ComputationBuilder::reshape(InstrId operand, std::vector<int64_t> out_dims) {
  Instruction instr;
  instr.opcode = Opcode::kReshape;
  instr.operands = {operand};
  instr.shape = Shape(shape(operand).dtype(), std::move(out_dims));
  return add_inferred(std::move(instr));
}

InstrId ComputationBuilder::transpose(InstrId operand, std::vector<int64_t> permutation) {
  Attributes a;
  a.dimensions = std::move(permutation);
  return make(Opcode::kTranspose, {operand}, std::move(a));
}

InstrId ComputationBuilder::slice(InstrId operand, std::vector<SliceDim> slice) {
  Attributes a;
  a.slice = std::move(slice);
  return make(Opcode::kSlice, {operand}, std::move(a));
}

InstrId ComputationBuilder::pad(InstrId operand, InstrId padding_value,
                                std::vector<PadDim> padding) {
  Attributes a;
  a.padding = std::move(padding);
  return make(Opcode::kPad, {operand, padding_value}, std::move(a));
}

InstrId ComputationBuilder::concatenate(std::vector<InstrId> operands, int64_t dimension) {
  Attributes a;
  a.dimensions = {dimension};
  return make(Opcode::kConcatenate, std::move(operands), std::move(a));
}

InstrId ComputationBuilder::reverse(InstrId operand, std::vector<int64_t> dimensions) {
  Attributes a;
  a.dimensions = std::move(dimensions);
  return make(Opcode::kReverse, {operand}, std::move(a));
}

InstrId ComputationBuilder::dynamic_slice(InstrId operand, std::vector<InstrId> start_indices,
                                          std::vector<int64_t> sizes) {
  Attributes a;
  a.dynamic_slice_sizes = std::move(sizes);
  std::vector<InstrId> ops = {operand};
  ops.insert(ops.end(), start_indices.begin(), start_indices.end());
  return make(Opcode::kDynamicSlice, std::move(ops), std::move(a));
}

InstrId ComputationBuilder::dynamic_update_slice(InstrId operand, InstrId update,
                                                 std::vector<InstrId> start_indices) {
  std::vector<InstrId> ops = {operand, update};
  ops.insert(ops.end(), start_indices.begin(), start_indices.end());
  return make(Opcode::kDynamicUpdateSlice, std::move(ops));
}

InstrId ComputationBuilder::unary(Opcode op, InstrId operand) { return make(op, {operand}); }

InstrId ComputationBuilder::convert(InstrId operand, DType to) {
  Instruction instr;
  instr.opcode = Opcode::kConvert;
  instr.operands = {operand};
  instr.shape = Shape(to, shape(operand).dims());
  return add_inferred(std::move(instr));
}

InstrId ComputationBuilder::binary(Opcode op, InstrId lhs, InstrId rhs) {
  return make(op, {lhs, rhs});
}

InstrId ComputationBuilder::compare(InstrId lhs, InstrId rhs, ComparisonDirection direction) {
  Attributes a;
  a.comparison = direction;
  return make(Opcode::kCompare, {lhs, rhs}, std::move(a));
}

InstrId ComputationBuilder::select(InstrId pred, InstrId on_true, InstrId on_false) {
  return make(Opcode::kSelect, {pred, on_true, on_false});
}

InstrId ComputationBuilder::clamp(InstrId min, InstrId operand, InstrId max) {
  return make(Opcode::kClamp, {min, operand, max});
}

InstrId ComputationBuilder::reduce(std::vector<InstrId> operands, std::vector<InstrId> init_values,
                                   std::vector<int64_t> dimensions, CompId to_apply) {
  Attributes a;
  a.dimensions = std::move(dimensions);
  operands.insert(operands.end(), init_values.begin(), init_values.end());
  return make(Opcode::kReduce, std::move(operands), std::move(a), {to_apply});
}

InstrId ComputationBuilder::reduce_window(InstrId operand, InstrId init_value,
                                          std::vector<WindowDim> window, CompId to_apply) {
  Attributes a;
  a.window = std::move(window);
  return make(Opcode::kReduceWindow, {operand, init_value}, std::move(a), {to_apply});
}

InstrId ComputationBuilder::dot(InstrId lhs, InstrId rhs, DotDims dims,
                                std::optional<DType> result_type) {
  Instruction instr;
  instr.opcode = Opcode::kDot;
  instr.operands = {lhs, rhs};
  instr.attrs.dot = std::move(dims);
  instr.shape = Shape(result_type.value_or(shape(lhs).dtype()), {});
  return add_inferred(std::move(instr));
}

InstrId ComputationBuilder::convolution(InstrId lhs, InstrId rhs, ConvolutionSpec spec) {
  Instruction instr;
  instr.opcode = Opcode::kConvolution;
  instr.operands = {lhs, rhs};
  instr.attrs.window = std::move(spec.window);
  instr.attrs.conv = std::move(spec.dims);
  instr.attrs.feature_group_count = spec.feature_group_count;
  instr.attrs.batch_group_count = spec.batch_group_count;
  instr.shape = Shape(shape(lhs).dtype(), {});
  return add_inferred(std::move(instr));
}

InstrId ComputationBuilder::gather(InstrId operand, InstrId start_indices, GatherDims dims,
                                   std::vector<int64_t> slice_sizes) {
  Attributes a;
  a.gather = std::move(dims);
  a.gather_slice_sizes = std::move(slice_sizes);
  return make(Opcode::kGather, {operand, start_indices}, std::move(a));
}

InstrId ComputationBuilder::scatter(InstrId operand, InstrId scatter_indices, InstrId updates,
                                    ScatterDims dims, CompId to_apply) {
  Attributes a;
  a.scatter = std::move(dims);
  return make(Opcode::kScatter, {operand, scatter_indices, updates}, std::move(a), {to_apply});
}

InstrId ComputationBuilder::while_loop(InstrId init, CompId condition, CompId body) {
  return make(Opcode::kWhile, {init}, {}, {condition, body});
}

InstrId ComputationBuilder::call(std::vector<InstrId> operands, CompId callee) {
  Instruction instr;
  instr.opcode = Opcode::kCall;
  instr.operands = std::move(operands);
  instr.called = {callee};
  if (module_) return add_inferred(std::move(instr));
  // Without a module the result shape cannot be known.
  throw UserError("call: the builder needs the module to infer the callee's result shape");
}

InstrId ComputationBuilder::tuple(std::vector<InstrId> elements) {
  return make(Opcode::kTuple, std::move(elements));
}

InstrId ComputationBuilder::get_tuple_element(InstrId tuple, int64_t index) {
  Attributes a;
  a.tuple_index = index;
  return make(Opcode::kGetTupleElement, {tuple}, std::move(a));
}

InstrId ComputationBuilder::partition_id() { return make(Opcode::kPartitionId, {}); }

// Collectives are built as XLA's SPMD partitioner emits them: with a
// channel id (cross-partition; unique ids are assigned once the module is
// complete) and, for all-reduce / all-gather / reduce-scatter, global device
// ids in the replica groups.
InstrId ComputationBuilder::all_reduce(InstrId operand, ReplicaGroups groups, CompId to_apply) {
  Attributes a;
  a.channel_id = 1;
  a.use_global_device_ids = true;
  a.replica_groups = std::move(groups);
  return make(Opcode::kAllReduce, {operand}, std::move(a), {to_apply});
}

InstrId ComputationBuilder::all_gather(InstrId operand, int64_t dimension, ReplicaGroups groups) {
  Attributes a;
  a.channel_id = 1;
  a.use_global_device_ids = true;
  a.dimensions = {dimension};
  a.replica_groups = std::move(groups);
  return make(Opcode::kAllGather, {operand}, std::move(a));
}

InstrId ComputationBuilder::reduce_scatter(InstrId operand, int64_t dimension, ReplicaGroups groups,
                                           CompId to_apply) {
  Attributes a;
  a.channel_id = 1;
  a.use_global_device_ids = true;
  a.dimensions = {dimension};
  a.replica_groups = std::move(groups);
  return make(Opcode::kReduceScatter, {operand}, std::move(a), {to_apply});
}

InstrId ComputationBuilder::all_to_all(InstrId operand, int64_t dimension, ReplicaGroups groups) {
  Attributes a;
  a.channel_id = 1;
  a.dimensions = {dimension};
  a.replica_groups = std::move(groups);
  return make(Opcode::kAllToAll, {operand}, std::move(a));
}

InstrId ComputationBuilder::collective_permute(
    InstrId operand, std::vector<std::pair<int64_t, int64_t>> source_target_pairs) {
  Attributes a;
  a.channel_id = 1;
  a.source_target_pairs = std::move(source_target_pairs);
  return make(Opcode::kCollectivePermute, {operand}, std::move(a));
}

InstrId ComputationBuilder::custom_call(std::vector<InstrId> operands, std::string target,
                                        Shape shape) {
  Instruction instr;
  instr.opcode = Opcode::kCustomCall;
  instr.operands = std::move(operands);
  instr.attrs.custom_call_target = std::move(target);
  instr.shape = std::move(shape);
  return add_inferred(std::move(instr));
}

Computation ComputationBuilder::build(InstrId root) && {
  computation_.set_root(root);
  return std::move(computation_);
}

Computation scalar_binary_computation(std::string name, Opcode op, DType dtype) {
  ComputationBuilder b(std::move(name));
  InstrId x = b.parameter(0, Shape::scalar(dtype), "x");
  InstrId y = b.parameter(1, Shape::scalar(dtype), "y");
  return std::move(b).build(b.binary(op, x, y));
}

}  // namespace podsim::compiler
