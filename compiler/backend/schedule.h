// Scheduling (per computation): a topological order that hides collective latency, after XLA's
// latency-hiding scheduler. Fusion groups are scheduled as one unit. Collectives start as early
// as their operands allow (within max_collective_hoist), direct users of a collective result run
// as late as their users allow, memory-reducing units run early (memory_aware), and everything
// else keeps its original order. List scheduling with a priority queue, O((V + E) log V).
// The priorities and their reasons: docs/compiler-backend.md#scheduling
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/backend/program.h"
#include "compiler/ir/module.h"

namespace podsim::compiler {

struct ScheduleOptions {
  // Positions (instruction ids; a fusion group's position is its root's
  // id) a collective may move ahead of its original position; <= 0 means
  // no limit.
  int64_t max_collective_hoist = 256;
  // Run memory-reducing units early (docs/compiler-backend.md#scheduling).
  bool memory_aware = true;
  // Positions (instruction ids) a memory-reducing reader of a collective
  // result waits after the collective (the collective's key + this many).
  int64_t collective_result_lag = 64;
  // Tail units (docs/compiler-backend.md#scheduling): at most this many units
  // depend on them (and at most 1/16 of the computation's units).
  int64_t tail_size_limit = 256;
};

std::vector<InstrId> schedule_computation(const Computation& computation, const FusionPlan& fusion,
                                          const ScheduleOptions& options = {});

// Reorders each group's members to follow `schedule` (program.h: members in
// schedule order, the root last).
void order_members_by_schedule(FusionPlan& fusion, const std::vector<InstrId>& schedule);

}  // namespace podsim::compiler
