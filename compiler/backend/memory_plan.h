// Memory planning: liveness of HBM buffers over a computation's schedule,
// per device (the module is the per-device program).
//  - A materialized value (an unfused instruction, a fusion root or a
//    multi-output fusion's extra output: a member read outside its group)
//    gets one buffer per array leaf, live from its schedule position to the
//    position of its last reader. A fused member reads at its group's root;
//    fused intermediates and duplicated cheap ops take no buffer.
//  - An expansion takes no buffer: a materialized cheap op (fusion.h's
//    is_cheap_to_duplicate: elementwise but not expensive (no exp, log,
//    divide, ...), select, clamp, broadcast, iota, or data movement:
//    reshape, transpose, concatenate, slice, dynamic-slice, pad, reverse)
//    whose inputs, read through fused members and other expansions, are at
//    most 1/kExpansionRatio (1/8) of its size, e.g. a one-hot mask
//    compare(iota, broadcast(ids)) or a MoE dispatch mask. XLA duplicates
//    such a producer into each consumer kernel (the forward and the
//    backward dot of an embedding) instead of writing it to HBM; its
//    readers read its inputs. Not when it is the root or read by a tuple,
//    while, call, custom-call, collective, scatter or dynamic-update-slice
//    (those need a real buffer). plan_fusion duplicates such ops into
//    their readers' kernels, so with its plans an expansion is rare (a
//    reader that fuses nothing, e.g. a gather), and the simulator then
//    still charges its kernel's write.
//  - A dynamic-update-slice that is the only reader of its operand writes
//    in place (XLA): it takes the operand's buffer (none inside a loop body
//    when the operand is the loop state's), unless that is an entry
//    parameter.
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

#include <string>
#include <vector>

#include "compiler/ir/module.h"
#include "compiler/backend/program.h"

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

// One buffer live at the peak (the entry's, plus the nested peak of the
// while/call running there), for finding what makes a peak.
struct LiveBufferAtPeak {
  CompId computation = kNoId;
  InstrId producer = kNoId;
  std::string instruction;  // the producer's name
  std::string op_name;      // the producer's op_name (model-level name)
  std::string shape;        // the buffer's leaf shape, XLA text
  std::string sharding;     // the producer's sharding attribute, else the global value's it holds a shard of ("" if none)
  ValueRole role = ValueRole::kTemporary;
  int64_t bytes = 0;
};

// Every non-empty buffer live at plan_memory's peak, largest first (ties by
// computation, producer). Their bytes sum to plan_memory(input).peak_bytes.
std::vector<LiveBufferAtPeak> live_buffers_at_peak(const MemoryPlanInput& input);

// Both of the above from one sweep.
struct MemoryPlanDetail {
  std::vector<LiveBufferAtPeak> live_at_peak;  // as live_buffers_at_peak
  std::vector<int64_t> live_by_position;       // as live_bytes_by_position
};
MemoryPlanDetail describe_memory_plan(const MemoryPlanInput& input);

// The entry's live bytes at each position of its schedule (a while/call adds
// its body's/callee's peak at its position), as plan_memory sweeps them: the
// maximum is plan_memory(input).peak_bytes, first reached at the position of
// its peak_at. Empty without an entry.
std::vector<int64_t> live_bytes_by_position(const MemoryPlanInput& input);

// Role of an entry parameter from its op_name ("param/", "opt_state/",
// "input/"; anything else counts as a parameter, e.g. HLO files).
ValueRole parameter_role(const Instruction& parameter);

}  // namespace podsim::compiler
