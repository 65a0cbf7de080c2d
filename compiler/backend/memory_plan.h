// Memory planning: liveness of HBM buffers over a computation's schedule, per device. A
// materialized value (unfused instruction, fusion root, multi-output extra output) gets one
// buffer per array leaf, live from its position to its last reader's; fused members,
// duplicated cheap ops and expansions take none; a sole-reader dynamic-update-slice writes in
// place; tuple/get-tuple-element/while alias their operands; entry parameters and outputs live
// throughout; a while's (call's) body peak adds to the outer computation.
// The rules and their reasons: docs/compiler-backend.md#memory-planning
#pragma once

#include <string>
#include <vector>

#include "compiler/backend/program.h"
#include "compiler/ir/module.h"

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
  std::string sharding;     // the producer's sharding attribute, else the global value's it holds a
                            // shard of ("" if none)
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
