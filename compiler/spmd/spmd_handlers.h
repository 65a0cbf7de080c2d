// Per-op handlers of the partitioner (internal). Each reads the partitioned
// operands, reshards them as the op needs, emits per-device HLO and returns
// the result as a PartitionedValue in `target` (the instruction's sharding).
#pragma once

#include <optional>
#include <vector>

#include "compiler/spmd/reshard.h"

namespace podsim::compiler {

struct HandlerInput {
  const Instruction& original;
  const std::vector<PartitionedValue>& operands;  // partitioned operands, in order
  const Sharding& target;
};

// Clones `original` with new operands and lets shape inference set the shape.
InstrId clone_with_operands(SpmdContext& context, const Instruction& original,
                            std::vector<InstrId> operands);

PartitionedValue handle_elementwise(SpmdContext& context, const HandlerInput& in);
PartitionedValue handle_broadcast(SpmdContext& context, const HandlerInput& in);
PartitionedValue handle_transpose(SpmdContext& context, const HandlerInput& in);
PartitionedValue handle_reshape(SpmdContext& context, const HandlerInput& in);
PartitionedValue handle_reduce(SpmdContext& context, const HandlerInput& in);
PartitionedValue handle_dot(SpmdContext& context, const HandlerInput& in);
// convolution_handler.cc, reduce_window_handler.cc: spatial halo exchange,
// else (convolution) the dot strategies on batch/feature dims.
PartitionedValue handle_convolution(SpmdContext& context, const HandlerInput& in);
PartitionedValue handle_reduce_window(SpmdContext& context, const HandlerInput& in);
// slice_pad_concat_handlers.cc: windowed ops with halo exchange.
PartitionedValue handle_slice(SpmdContext& context, const HandlerInput& in);
PartitionedValue handle_pad(SpmdContext& context, const HandlerInput& in);
PartitionedValue handle_reverse(SpmdContext& context, const HandlerInput& in);
PartitionedValue handle_concatenate(SpmdContext& context, const HandlerInput& in);
// dynamic_slice_handlers.cc
PartitionedValue handle_dynamic_slice(SpmdContext& context, const HandlerInput& in);
PartitionedValue handle_dynamic_update_slice(SpmdContext& context, const HandlerInput& in);
// iota_handlers.cc: shard-shaped iota plus the tile offset.
PartitionedValue handle_iota(SpmdContext& context, const HandlerInput& in);
// A constant whose elements are all equal, as a broadcast scalar; else nullopt.
std::optional<PartitionedValue> handle_uniform_constant(SpmdContext& context,
                                                        const HandlerInput& in);
// gather_scatter_handlers.cc
PartitionedValue handle_gather(SpmdContext& context, const HandlerInput& in);
PartitionedValue handle_scatter(SpmdContext& context, const HandlerInput& in);
// control_flow_handlers.cc: tuples, while, call.
PartitionedValue handle_tuple(SpmdContext& context, const HandlerInput& in);
PartitionedValue handle_get_tuple_element(SpmdContext& context, const HandlerInput& in);
PartitionedValue handle_while(SpmdContext& context, const HandlerInput& in);
PartitionedValue handle_call(SpmdContext& context, const HandlerInput& in);
PartitionedValue handle_conditional(SpmdContext& context, const HandlerInput& in);
// Leaf shardings of `sharding` over `shape` (pre-order; a non-tuple sharding
// applies to every leaf).
std::vector<Sharding> leaf_shardings(const Sharding& sharding, const Shape& shape);
// Sharding of tuple element `index` (a leaf, or a tuple sharding).
Sharding element_sharding(const Sharding& sharding, const Shape& shape, int64_t index);
// element_sharding of every tuple element, in one pass over the leaves.
std::vector<Sharding> element_shardings(const Sharding& sharding, const Shape& shape);
// Per-device shape of `base` under `sharding` (tuples leaf by leaf).
Shape partitioned_shape(const Shape& base, const Sharding& sharding);

// How a computation is entered: non-entry computations take their
// parameters in the caller's shardings (empty: the annotations) and their
// root is resharded to root_sharding when set.
struct ComputationSignature {
  std::vector<Sharding> parameter_shardings;
  std::optional<Sharding> root_sharding;
};
// partitioner.cc: partitions `computation` (of context.source_module()) into
// context's builder; returns the root.
PartitionedValue partition_computation(SpmdContext& context, const Computation& computation,
                                       const ComputationSignature& signature);
// Partitions a while/call callee into the module (in place on first use, a
// clone afterwards); returns its id.
CompId partition_callee(SpmdContext& context, CompId callee, const ComputationSignature& signature);
// custom-call "Sharding" (annotation_handler.cc): reshard the operand to the
// annotation, pass it through.
bool is_sharding_annotation(const Instruction& instr);
PartitionedValue handle_sharding_annotation(SpmdContext& context, const HandlerInput& in);
// Replicate every operand, run the whole op, reshard the result.
PartitionedValue handle_default(SpmdContext& context, const HandlerInput& in);

// custom_call_handler.cc: custom-calls, manual regions, local ops.
// Clones `original` with new operands and the given (per-device) shape.
InstrId clone_with_shape(SpmdContext& context, const Instruction& original,
                         std::vector<InstrId> operands, Shape shape);
// SPMDFullToShardShape / xla.sdy.GlobalToLocalShape, and the way back.
bool is_manual_region_entry(const Instruction& instr);
bool is_manual_region_exit(const Instruction& instr);
// {manual}, or a tuple whose leaves are all {manual}.
bool is_fully_manual(const Sharding& sharding);
PartitionedValue handle_manual_region_entry(SpmdContext& context, const HandlerInput& in);
PartitionedValue handle_manual_region_exit(SpmdContext& context, const HandlerInput& in);
// A manual instruction: cloned on the operands' local values, unpartitioned.
PartitionedValue handle_manual_op(SpmdContext& context, const HandlerInput& in);
// Any custom-call target other than the above and "Sharding".
PartitionedValue handle_custom_call(SpmdContext& context, const HandlerInput& in);
// Sort along `dim` (and TopK along the last dim): other dims keep their tiling.
PartitionedValue handle_sort_like(SpmdContext& context, const HandlerInput& in, int64_t dim);
// outfeed: each device sends its shard of the data, laid out as the
// outfeed's annotation says (the data's leaves, then the token's).
PartitionedValue handle_outfeed(SpmdContext& context, const HandlerInput& in);
// infeed: each device infeeds its shard when the data is tiled evenly (the
// interpreter gives it its tile of the seeded value: the instruction's
// global_sharding); otherwise the whole value, sliced.
PartitionedValue handle_infeed(SpmdContext& context, const HandlerInput& in);
// opt-barrier, add-dependency, after-all, rng...: local at the per-device shape.
PartitionedValue handle_local_op(SpmdContext& context, const HandlerInput& in);

}  // namespace podsim::compiler
