// Scheduling (per computation): a topological order that hides collective
// latency, after XLA's latency-hiding scheduler. Fusion groups are scheduled
// as one unit (their members contiguous, in id order); duplicated cheap
// members (fusion.h) are their own units placed before their first group.
// Priorities:
//  - a collective starts as early as its operands allow (at most
//    max_collective_hoist units before its original place, so e.g. weight
//    all-gathers are prefetched about a layer ahead instead of all at the
//    start, which would keep every gathered weight live at once);
//  - a direct user of a collective result runs as late as its own users
//    allow (just before the first of them), leaving the work in between to
//    overlap the collective;
//  - everything else keeps its original relative order (memory-friendly).
// List scheduling with a priority queue: O((V + E) log V).
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/ir/module.h"
#include "compiler/pipeline/program.h"

namespace podsim::compiler {

struct ScheduleOptions {
  // Units (unfused instructions or fusion groups) a collective may move
  // ahead of its original position; <= 0 means no limit.
  int64_t max_collective_hoist = 256;
};

std::vector<InstrId> schedule_computation(const Computation& computation, const FusionPlan& fusion,
                                          const ScheduleOptions& options = {});

// Reorders each group's members to follow `schedule` (program.h: members in
// schedule order, the root last).
void order_members_by_schedule(FusionPlan& fusion, const std::vector<InstrId>& schedule);

}  // namespace podsim::compiler
