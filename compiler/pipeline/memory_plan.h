// Memory planning: liveness of HBM buffers over a computation's schedule,
// per device (the module is the per-device program).
//  - A materialized value (an unfused instruction or a fusion root) gets one
//    buffer per array leaf, live from its schedule position to the position
//    of its last reader. A fused member reads at its group's root; fused
//    intermediates and duplicated cheap ops take no buffer.
//  - tuple, get-tuple-element and while alias their operands' buffers (the
//    loop state is updated in place), so reads through them extend those.
//  - Entry parameters and the root's outputs are live throughout (as XLA
//    gives live-out buffers their own allocation). With outputs_alias_parameters (training steps,
//    whose weight/slot parameters are donated), root element i+1 is written
//    into the i-th "param/"/"opt_state/" parameter's buffer when the byte
//    sizes match, so it adds nothing.
//  - At a while (call) the body's (callee's) own peak, without its
//    parameter buffers, adds to the live bytes of the outer computation.
// Roles (program.h) from op_name prefixes, see role_of_buffer in the .cc.
#pragma once

#include <vector>

#include "compiler/ir/module.h"
#include "compiler/pipeline/program.h"

namespace podsim::compiler {

struct MemoryPlanOptions {
  bool outputs_alias_parameters = false;
};

struct MemoryPlanInput {
  const Module& module;
  // Per computation (CompId); an empty or missing entry means id order.
  const std::vector<std::vector<InstrId>>& schedule;
  // Per computation; an entry whose group_of does not match the computation
  // size means unfused.
  const std::vector<FusionPlan>& fusion;
  MemoryPlanOptions options;
};

MemoryPlan plan_memory(const MemoryPlanInput& input);

// Role of an entry parameter from its op_name ("param/", "opt_state/",
// "input/"; anything else counts as a parameter, e.g. HLO files).
ValueRole parameter_role(const Instruction& parameter);

}  // namespace podsim::compiler
