// Builder: constructs computations op by op with shapes inferred by
// shape_inference (so a built module is valid by construction). Used by the
// model builders, autodiff, the partitioner and tests.
//
//   Module m("example");
//   CompId add = m.add_computation(scalar_binary_computation("add", Opcode::kAdd, DType::kF32));
//   ComputationBuilder b("main", &m);
//   InstrId x = b.parameter(0, Shape(DType::kF32, {4, 8}), "x");
//   InstrId zero = b.constant(Literal::scalar(DType::kF32, 0));
//   InstrId s = b.reduce({x}, {zero}, {1}, add);
//   m.set_entry(m.add_computation(std::move(b).build(s)));
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/module.h"

namespace podsim::compiler {

class ComputationBuilder {
 public:
  // `module` is needed for ops whose shape depends on a called computation
  // (call, reduce bodies checks); it must outlive the builder.
  explicit ComputationBuilder(std::string name, const Module* module = nullptr);

  // Appends an instruction whose shape is already set (no inference). An
  // empty name gets a fresh one. Returns its id.
  InstrId add(Instruction instr);
  // Appends an instruction and sets its shape by inference.
  InstrId add_inferred(Instruction instr);

  const Shape& shape(InstrId id) const { return computation_.instr(id).shape; }
  const Computation& computation() const { return computation_; }
  Instruction& mutable_instr(InstrId id) { return computation_.mutable_instr(id); }
  // Sets the XLA text sharding of an instruction.
  void set_sharding(InstrId id, std::string sharding_text);
  void set_op_name(InstrId id, std::string op_name);
  // op_name given to every instruction added from now on that has none
  // (a name scope, as jax.named_scope); "" turns it off.
  void set_op_name_scope(std::string scope) { op_name_scope_ = std::move(scope); }
  const std::string& op_name_scope() const { return op_name_scope_; }
  // Instructions added so far (the next id).
  InstrId size() const { return computation_.size(); }

  InstrId parameter(int64_t number, Shape shape, std::string name = "");
  InstrId constant(Literal literal);
  InstrId scalar_constant(DType dtype, double value);
  InstrId iota(Shape shape, int64_t iota_dimension);
  InstrId broadcast(InstrId operand, std::vector<int64_t> out_dims,
                    std::vector<int64_t> dimensions);
  InstrId reshape(InstrId operand, std::vector<int64_t> out_dims);
  InstrId transpose(InstrId operand, std::vector<int64_t> permutation);
  InstrId slice(InstrId operand, std::vector<SliceDim> slice);
  InstrId pad(InstrId operand, InstrId padding_value, std::vector<PadDim> padding);
  InstrId concatenate(std::vector<InstrId> operands, int64_t dimension);
  InstrId reverse(InstrId operand, std::vector<int64_t> dimensions);
  InstrId dynamic_slice(InstrId operand, std::vector<InstrId> start_indices,
                        std::vector<int64_t> sizes);
  InstrId dynamic_update_slice(InstrId operand, InstrId update, std::vector<InstrId> start_indices);
  InstrId unary(Opcode op, InstrId operand);
  InstrId convert(InstrId operand, DType to);
  InstrId binary(Opcode op, InstrId lhs, InstrId rhs);
  InstrId compare(InstrId lhs, InstrId rhs, ComparisonDirection direction);
  InstrId select(InstrId pred, InstrId on_true, InstrId on_false);
  InstrId clamp(InstrId min, InstrId operand, InstrId max);
  // Variadic reduce: operands and init values pair up; result is a tuple when
  // there is more than one operand.
  InstrId reduce(std::vector<InstrId> operands, std::vector<InstrId> init_values,
                 std::vector<int64_t> dimensions, CompId to_apply);
  InstrId reduce_window(InstrId operand, InstrId init_value, std::vector<WindowDim> window,
                        CompId to_apply);
  // result_type defaults to the lhs element type.
  InstrId dot(InstrId lhs, InstrId rhs, DotDims dims,
              std::optional<DType> result_type = std::nullopt);
  struct ConvolutionSpec {
    std::vector<WindowDim> window;
    ConvDims dims;
    int64_t feature_group_count = 1;
    int64_t batch_group_count = 1;
  };
  InstrId convolution(InstrId lhs, InstrId rhs, ConvolutionSpec spec);
  InstrId gather(InstrId operand, InstrId start_indices, GatherDims dims,
                 std::vector<int64_t> slice_sizes);
  InstrId scatter(InstrId operand, InstrId scatter_indices, InstrId updates, ScatterDims dims,
                  CompId to_apply);
  InstrId while_loop(InstrId init, CompId condition, CompId body);
  InstrId call(std::vector<InstrId> operands, CompId callee);
  InstrId tuple(std::vector<InstrId> elements);
  InstrId get_tuple_element(InstrId tuple, int64_t index);
  InstrId partition_id();
  InstrId all_reduce(InstrId operand, ReplicaGroups groups, CompId to_apply);
  InstrId all_gather(InstrId operand, int64_t dimension, ReplicaGroups groups);
  InstrId reduce_scatter(InstrId operand, int64_t dimension, ReplicaGroups groups, CompId to_apply);
  // Array all-to-all: splits `dimension` into group_size chunks, sends chunk i
  // to the i-th group member and concatenates received chunks on the same dim.
  InstrId all_to_all(InstrId operand, int64_t dimension, ReplicaGroups groups);
  InstrId collective_permute(InstrId operand,
                             std::vector<std::pair<int64_t, int64_t>> source_target_pairs);
  // custom-call with an explicit result shape (e.g. "Sharding" annotations).
  InstrId custom_call(std::vector<InstrId> operands, std::string target, Shape shape);

  // Finishes the computation with `root` as its root.
  Computation build(InstrId root) &&;

 private:
  InstrId make(Opcode op, std::vector<InstrId> operands, Attributes attrs = {},
               std::vector<CompId> called = {});
  std::string fresh_name(Opcode op);

  Computation computation_;
  const Module* module_;
  int next_name_ = 0;
  std::string op_name_scope_;
};

// A computation `name(a, b) = op(a, b)` over scalars of dtype: the usual
// reduce / all-reduce body (add, maximum, ...).
Computation scalar_binary_computation(std::string name, Opcode op, DType dtype);

}  // namespace podsim::compiler
