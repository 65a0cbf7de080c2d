// Autodiff of counted while loops (internal to autodiff). Supported form: what a scan over stacked
// layers lowers to (a tuple init with a constant-initialised integer counter k, condition
// gte(param, k) < N, body incrementing k by 1; T = N - c0 >= 1). Forward: a recording loop stacks
// every carry element the body changes; backward: a reverse loop recomputes each iteration's
// forward from the stacks and runs its reverse sweep ("recompute/" ops, whatever the remat policy).
// The form and the in-place stacked-weight gradient:
// docs/compiler.md#autodiff-of-counted-while-loops
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "compiler/ir/builder.h"
#include "compiler/training/ir_helpers.h"
#include "compiler/training/remat.h"

namespace podsim::compiler {

struct WhileRecording {
  InstrId recorded_while = kNoId;  // builder id: tuple(original elements..., stacks...)
  int64_t element_count = 0;       // n original elements
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
std::optional<InstrId> emit_recording_while(ComputationBuilder& b, Module& module,
                                            const Computation& source, InstrId while_id,
                                            const std::vector<InstrId>& map,
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
