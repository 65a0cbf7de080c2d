// Fusion planning (XLA instruction fusion, re-derived): which instructions of a computation run as
// one kernel. Output fusion (a dot/convolution with its single-user elementwise consumers, ending
// possibly in an in-place dynamic-update-slice), loop/input fusion (a consumer absorbs its
// loop-fusible producers), multi-output fusion (a reduce takes in the loop kernel it reduces) and
// duplication of cheap ops into every group that reads them. Never fused: parameters,
// collectives, while/call, tuples, custom-calls. The rules and their reasons:
// docs/compiler-backend.md#fusion
#pragma once

#include "compiler/backend/program.h"
#include "compiler/ir/module.h"

namespace podsim::compiler {

// A cheap op whose inputs are at most 1/kExpansionRatio of its bytes is an
// expansion the memory plan recomputes in its readers instead of writing it
// (memory_plan.h); fusion duplicates any cheap op reading at most its own
// bytes (docs/compiler-backend.md#fusion).
inline constexpr int64_t kExpansionRatio = 8;

// May this op be fused into a consumer (as a non-root member)?
bool is_loop_fusible(Opcode op);
// Broadcast, iota and constant: recomputed inside each consumer kernel,
// never a kernel of their own.
bool is_free_to_recompute(Opcode op);
// Loop-fusible and not expensive: may be recomputed in several groups (the
// schedule and memory plan treat such a member listed in several groups as
// recomputed in each).
bool is_cheap_to_duplicate(Opcode op);

// Groups in members-by-id order (a topological order; the last is the root).
FusionPlan plan_fusion(const Computation& computation);

// Per instruction: may plan_fusion recompute it inside its readers' kernels
// (the duplication rule above)? A group member read outside its group that
// is not one of these is a multi-output fusion's extra output.
std::vector<bool> duplicable_ops(const Computation& computation);

// Instructions that appear in more than one group (duplicated cheap ops).
std::vector<bool> duplicated_members(const FusionPlan& plan, int instruction_count);

}  // namespace podsim::compiler
