// Tuples, get-tuple-element, while and call (docs/reference/gspmd.md#partitioner-structure
// and #per-op-partitioning): a tuple value is one tuple-shaped instruction whose leaves are
// the shards under the leaf shardings of a tuple Sharding (pre-order, as
// Sharding::tuple flattens). Tuple reshards go leaf by leaf through
// get-tuple-element and re-tuple. while: the init is resharded to the loop's
// sharding, the body is partitioned with its parameter and root in that
// sharding (so the loop state keeps shard shapes) and the condition with its
// parameter in it. call: the callee is partitioned with the operands'
// current shardings as its parameters and the call's sharding at its root.
// A callee is replaced in place the first time; a further call site gets a
// partitioned clone.
#include <cassert>

#include <fmt/format.h>

#include "compiler/spmd/spmd_handlers.h"

namespace podsim::compiler {
namespace {

// Leaf index range of tuple element `index` of `shape`.
std::pair<int64_t, int64_t> element_leaf_range(const Shape& shape, int64_t index) {
  int64_t first = 0;
  for (int64_t i = 0; i < index; ++i) first += shape.tuple_shape(static_cast<int>(i)).leaf_count();
  return {first, shape.tuple_shape(static_cast<int>(index)).leaf_count()};
}

Sharding sharding_of_leaves(const std::vector<Sharding>& leaves, const Shape& shape, int64_t first,
                            int64_t count) {
  if (shape.is_array()) return leaves[static_cast<size_t>(first)];
  return Sharding::tuple(
      std::vector<Sharding>(leaves.begin() + first, leaves.begin() + first + count));
}

// Whether `sharding` gives each leaf of `shape` its own sharding (else one
// sharding, or a one-element tuple of it, applies to every leaf).
bool per_leaf(const Sharding& sharding, const Shape& shape) {
  return sharding.is_tuple() &&
         static_cast<int64_t>(sharding.tuple_elements().size()) == shape.leaf_count();
}

// Sharding of a tuple element `element` whose leaves are [first,
// first + count), as leaf_shardings reads `sharding`, copying no other leaf:
// a training step's root tuple has thousands of elements, and copying every
// leaf sharding per element made tuples quadratic in their size.
Sharding sharding_of_element(const Sharding& sharding, bool leaves_apart, const Shape& element,
                             int64_t first, int64_t count) {
  if (leaves_apart) return sharding_of_leaves(sharding.tuple_elements(), element, first, count);
  assert(!sharding.is_tuple() || sharding.tuple_elements().size() == 1);
  const Sharding& uniform = sharding.is_tuple() ? sharding.tuple_elements()[0] : sharding;
  if (element.is_array()) return uniform;
  return Sharding::tuple(std::vector<Sharding>(static_cast<size_t>(count), uniform));
}

Shape partitioned_shape_of_leaves(const Shape& base, const std::vector<Sharding>& leaves,
                                  size_t& next) {
  if (base.is_array()) return Shape(base.dtype(), shard_shape(leaves[next++], base.dims()));
  std::vector<Shape> elements;
  for (const Shape& element : base.tuple_shapes())
    elements.push_back(partitioned_shape_of_leaves(element, leaves, next));
  return Shape::tuple(std::move(elements));
}

}  // namespace

std::vector<Sharding> leaf_shardings(const Sharding& sharding, const Shape& shape) {
  if (per_leaf(sharding, shape)) return sharding.tuple_elements();
  const int64_t count = shape.leaf_count();
  if (sharding.is_tuple() && sharding.tuple_elements().size() == 1)
    return std::vector<Sharding>(static_cast<size_t>(count), sharding.tuple_elements()[0]);
  assert(!sharding.is_tuple());
  return std::vector<Sharding>(static_cast<size_t>(count), sharding);
}

Sharding element_sharding(const Sharding& sharding, const Shape& shape, int64_t index) {
  auto [first, count] = element_leaf_range(shape, index);
  return sharding_of_element(sharding, per_leaf(sharding, shape),
                             shape.tuple_shape(static_cast<int>(index)), first, count);
}

std::vector<Sharding> element_shardings(const Sharding& sharding, const Shape& shape) {
  std::vector<Sharding> out;
  out.reserve(shape.tuple_shapes().size());
  const bool leaves_apart = per_leaf(sharding, shape);
  int64_t first = 0;
  for (const Shape& element : shape.tuple_shapes()) {
    const int64_t count = element.leaf_count();
    out.push_back(sharding_of_element(sharding, leaves_apart, element, first, count));
    first += count;
  }
  return out;
}

Shape partitioned_shape(const Shape& base, const Sharding& sharding) {
  std::vector<Sharding> leaves = leaf_shardings(sharding, base);
  size_t next = 0;
  return partitioned_shape_of_leaves(base, leaves, next);
}

PartitionedValue reshard_tuple(SpmdContext& context, const PartitionedValue& value,
                               const Sharding& target) {
  const Shape& shape = value.base_shape;
  const std::vector<Sharding> from = element_shardings(value.sharding, shape);
  const std::vector<Sharding> to = element_shardings(target, shape);
  std::vector<InstrId> elements;
  for (int64_t i = 0; i < static_cast<int64_t>(shape.tuple_shapes().size()); ++i) {
    const Shape& element = shape.tuple_shape(static_cast<int>(i));
    PartitionedValue part{context.builder().get_tuple_element(value.id, i), element,
                          from[static_cast<size_t>(i)]};
    elements.push_back(reshard(context, part, to[static_cast<size_t>(i)]).id);
  }
  return PartitionedValue{context.builder().tuple(std::move(elements)), shape, target};
}

PartitionedValue handle_tuple(SpmdContext& context, const HandlerInput& in) {
  const std::vector<Sharding> targets = element_shardings(in.target, in.original.shape);
  std::vector<InstrId> elements;
  for (size_t i = 0; i < in.operands.size(); ++i)
    elements.push_back(reshard(context, in.operands[i], targets[i]).id);
  return PartitionedValue{context.builder().tuple(std::move(elements)), in.original.shape,
                          in.target};
}

PartitionedValue handle_get_tuple_element(SpmdContext& context, const HandlerInput& in) {
  const PartitionedValue& operand = in.operands[0];
  const int64_t index = in.original.attrs.tuple_index;
  PartitionedValue element{context.builder().get_tuple_element(operand.id, index),
                           in.original.shape,
                           element_sharding(operand.sharding, operand.base_shape, index)};
  return reshard(context, element, in.target);
}

CompId partition_callee(SpmdContext& context, CompId callee,
                        const ComputationSignature& signature) {
  const Module& source = context.source_module();
  const Computation& original = source.computation(callee);
  SpmdContext child(&context.module(), context.num_devices());
  child.share_session_with(context);
  PartitionedValue root = partition_computation(child, original, signature);
  Computation built = std::move(child.builder()).build(root.id);
  context.stats().full_replications += child.stats().full_replications;
  context.stats().default_fallbacks += child.stats().default_fallbacks;
  if (context.partitioned_callees().insert(callee).second) {
    built.set_name(original.name());
    context.module().mutable_computation(callee) = std::move(built);
    return callee;
  }
  built.set_name(fmt::format("{}.spmd{}", original.name(), context.module().computation_count()));
  return context.module().add_computation(std::move(built));
}

PartitionedValue handle_while(SpmdContext& context, const HandlerInput& in) {
  const PartitionedValue init = reshard(context, in.operands[0], in.target);
  const CompId condition =
      partition_callee(context, in.original.while_condition(),
                       ComputationSignature{{in.target}, Sharding::replicated()});
  const CompId body = partition_callee(context, in.original.while_body(),
                                       ComputationSignature{{in.target}, in.target});
  InstrId loop = context.builder().while_loop(init.id, condition, body);
  return PartitionedValue{loop, in.original.shape, in.target};
}

PartitionedValue handle_call(SpmdContext& context, const HandlerInput& in) {
  ComputationSignature signature;
  std::vector<InstrId> operands;
  for (const PartitionedValue& operand : in.operands) {
    signature.parameter_shardings.push_back(operand.sharding);
    operands.push_back(operand.id);
  }
  signature.root_sharding = in.target;
  const CompId callee = partition_callee(context, in.original.to_apply(), signature);
  InstrId call = context.builder().call(std::move(operands), callee);
  return PartitionedValue{call, in.original.shape, in.target};
}

// conditional: the branch index (or predicate) is replicated so every
// device takes the same branch; branch b is partitioned like a callee with
// operand b + 1's sharding as its parameter and the result's at its root.
PartitionedValue handle_conditional(SpmdContext& context, const HandlerInput& in) {
  std::vector<InstrId> operands{reshard(context, in.operands.at(0), Sharding::replicated()).id};
  std::vector<CompId> branches;
  for (size_t b = 0; b < in.original.called.size(); ++b) {
    ComputationSignature signature;
    if (b + 1 < in.operands.size()) {
      signature.parameter_shardings.push_back(in.operands[b + 1].sharding);
      operands.push_back(in.operands[b + 1].id);
    }
    signature.root_sharding = in.target;
    branches.push_back(partition_callee(context, in.original.called[b], signature));
  }
  Instruction conditional = in.original;
  conditional.called = std::move(branches);
  InstrId id = clone_with_shape(context, conditional, std::move(operands),
                                partitioned_shape(in.original.shape, in.target));
  return PartitionedValue{id, in.original.shape, in.target};
}

}  // namespace podsim::compiler
