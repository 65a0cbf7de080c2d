// The per-device program as the simulator runs it: the entry schedule
// flattened into one in-order list of steps (calls inlined, while bodies
// repeated known_trip_count times, fusion groups as one step at their root,
// free ops dropped). Every device runs the same list (SPMD).
//
// Dependencies. The compute stream executes steps in order and collectives
// run in issue order on one async stream, so a compute step only ever has to
// wait for the newest collective its operands (transitively through free ops:
// tuple, get-tuple-element, parameter, reshape, loop state) depend on: when
// collective c is done, every earlier collective is done. A step therefore
// carries one number, `wait_for` (a collective ordinal, -1 = none). A
// collective needs nothing: its compute operands are done when the compute
// stream issues it, and its collective operands finish before it starts.
//
// Not modelled: while conditions (a scalar compare on the scalar unit, free),
// a while whose trip count cannot be derived runs its body once (counted in
// StepProgram::unknown_trip_counts), a conditional runs its first branch.
// An asynchronous start (all-gather-start, ...) is the collective, issued
// where the start is; its done is free and passes the wait on to readers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/pipeline/program.h"
#include "sim/collective_catalog.h"
#include "sim/op_cost.h"

namespace podsim::sim {

// One distinct op of the program (an instruction or a fusion group).
struct OpInfo {
  std::string name;
  std::string op_name;
  std::string opcode;  // "fusion" for a group
  std::string shape;
  OpCost cost;               // compute ops
  int32_t collective = -1;   // CollectiveCatalog spec, collectives only
  // The synchronous collective it runs ("all-gather" for all-gather-start).
  std::string collective_kind;
};

struct Step {
  int32_t op = 0;         // index into StepProgram::ops
  int32_t wait_for = -1;  // compute: collective ordinal to wait for
  bool collective = false;
};

struct StepProgram {
  std::vector<OpInfo> ops;
  std::vector<Step> steps;
  std::vector<int32_t> collective_steps;  // ordinal -> step index
  int64_t unknown_trip_counts = 0;
  int64_t conditionals_first_branch = 0;  // conditionals run as their first branch
  double total_compute_s = 0;  // sum of compute step times (one device)
};

struct FlattenInputs {
  const compiler::SpmdProgram& program;
  OpCostModel& costs;
  CollectiveCatalog& collectives;
  // Guard against runaway unrolling; UserError beyond it.
  int64_t max_steps = 200'000'000;
};

StepProgram flatten_program(const FlattenInputs& inputs);

}  // namespace podsim::sim
