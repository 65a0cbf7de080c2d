// Autodiff of counted while loops (internal to autodiff).
//
// Supported form (what a scan over stacked layers lowers to): the init is a
// tuple instruction of arrays; one element k is an integer counter whose
// init is a constant c0; the condition is compare(gte(param, k), constant
// N, LT); the body's root is a tuple whose element k is gte(param, k) + 1
// (constant). Trip count T = N - c0 >= 1.
//
// Forward: the loop is copied as a "recording" loop that also writes every
// carry element the body changes into a stack [T, ...] (dynamic-update-slice
// at the iteration index). Elements the body passes through unchanged
// (loop-invariant, e.g. stacked weights) are not stacked.
// Backward: a reverse loop t = T-1 .. 0 reads carry t from the stacks,
// recomputes the body's forward from it and runs the body's reverse sweep;
// its carry holds the adjoints of the carry elements. The body is therefore
// always rematerialised once per iteration (iteration-boundary
// checkpointing, as jax.checkpoint on a scan body), whatever the remat
// policy; those ops are "recompute/" and counted.
// A loop-invariant element read in the body only as its slice at the loop
// counter (dynamic-slice [counter, 0, ...] of size 1 in dim 0: stacked
// weights) whose adjoint enters the loop as zero gets each iteration's
// slice gradient written in place (dynamic-update-slice into the carried
// adjoint, no read-add): the slices of different iterations are disjoint,
// as jax.lax.scan's transpose stacks the per-iteration gradients.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "compiler/ir/builder.h"
#include "compiler/training/ir_helpers.h"
#include "compiler/training/remat.h"

namespace podsim::compiler {

struct WhileRecording {
  InstrId recorded_while = kNoId;       // builder id: tuple(original elements..., stacks...)
  int64_t element_count = 0;            // n original elements
  int64_t counter_index = 0;
  int64_t counter_start = 0;
  int64_t trip_count = 0;
  std::vector<int64_t> stacked_elements;  // element index of stack s (element n + s)
};
using WhileRecordings = std::unordered_map<InstrId, WhileRecording>;

// Emits the recording copy of source while `while_id` (operands already
// mapped through `map`); returns the id standing for the original loop's
// result (a tuple of the recorded loop's first n elements). nullopt when the
// loop is not of the counted form (it is then copied plainly and cannot be
// differentiated).
std::optional<InstrId> emit_recording_while(ComputationBuilder& b, Module& module, const Computation& source,
                                            InstrId while_id, const std::vector<InstrId>& map,
                                            WhileRecordings& recordings);

struct WhileAdjointContext {
  ComputationBuilder& b;
  training::ReducerCache& reducers;
  const Computation& source;
  InstrId while_id;  // in source
  const WhileRecordings* recordings;
  RematChoice remat;
  // Per init element: whether it depends on a differentiated parameter
  // (empty = all do). A loop-invariant element that does not (a mask, a
  // position table) carries no adjoint.
  std::vector<bool> init_active = {};
};

struct WhileAdjoint {
  std::vector<InstrId> init_element_adjoints;  // kNoId = zero
  double recomputed_flops = 0;
  int64_t recomputed_instructions = 0;
};

WhileAdjoint emit_while_adjoint(const WhileAdjointContext& context,
                                const std::vector<InstrId>& result_element_adjoints);

}  // namespace podsim::compiler
