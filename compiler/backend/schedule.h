// Scheduling (per computation): a topological order that hides collective
// latency, after XLA's latency-hiding scheduler. Fusion groups are scheduled
// as one unit (their members contiguous, in id order). A duplicated cheap
// member (fusion.h) is part of every group unit that recomputes it: that
// unit reads its inputs (so a duplicated g * g leaves its gradient a value
// the optimizer update's units read, and the rules below see it), and it
// is emitted once, with the first of them that runs. A unit writes its
// root and, for a multi-output kernel, its extra outputs (the members read
// by other units).
// Priorities:
//  - a collective starts as early as its operands allow (at most
//    max_collective_hoist positions, i.e. instruction ids, before its
//    original place, so e.g. weight all-gathers are prefetched a little
//    ahead instead of all at the start, which would keep every gathered
//    weight live at once);
//  - a direct user of a collective result runs as late as its own users
//    allow (just before the first of them), leaving the work in between to
//    overlap the collective;
//  - memory_aware: a unit that reduces memory runs as soon as its operands
//    are ready, where XLA's memory-aware scheduler would put it:
//     * a tail unit that reads a value only tails read: at most
//       tail_size_limit units (the root aside), and at most 1/16 of all,
//       depend on a tail, so it feeds the program's outputs through a short
//       chain. E.g. a weight's optimizer update (with the gradient's dot
//       and reduce-scatter and the Adafactor statistics): it frees the
//       gradient and writes the new weight in place of the old one;
//     * a unit that frees more bytes than it allocates (it is the last
//       reader of operand buffers bigger than its output, e.g. an add
//       accumulating gradient contributions);
//    after reading a collective's result it waits collective_result_lag
//    positions (instruction ids, not units: a fusion group spans many ids,
//    so in a fused program this is a few units), so the collective still
//    overlaps some work (XLA schedules a weight's
//    update, and the gradient reduce-scatter feeding it, right after its
//    gradient is done); a collective reading work that ran early follows
//    it (no hoist limit), and constant-only operands of such a unit run
//    when it needs them;
//  - everything else keeps its original relative order (memory-friendly).
// List scheduling with a priority queue: O((V + E) log V), plus
// O((V + E) tail_size_limit) for the tail sets; a unit that becomes
// memory-reducing while it waits (another reader of its operand ran) is
// pushed again, at most once.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/ir/module.h"
#include "compiler/backend/program.h"

namespace podsim::compiler {

struct ScheduleOptions {
  // Positions (instruction ids; a fusion group's position is its root's
  // id) a collective may move ahead of its original position; <= 0 means
  // no limit.
  int64_t max_collective_hoist = 256;
  // Run memory-reducing units early (see above).
  bool memory_aware = true;
  // Positions (instruction ids) a memory-reducing reader of a collective
  // result waits after the collective (the collective's key + this many).
  int64_t collective_result_lag = 64;
  // Tail units (see above): at most this many units depend on them (and at
  // most 1/16 of the computation's units).
  int64_t tail_size_limit = 256;
};

std::vector<InstrId> schedule_computation(const Computation& computation, const FusionPlan& fusion,
                                          const ScheduleOptions& options = {});

// Reorders each group's members to follow `schedule` (program.h: members in
// schedule order, the root last).
void order_members_by_schedule(FusionPlan& fusion, const std::vector<InstrId>& schedule);

}  // namespace podsim::compiler
