// The per-device program as the simulator runs it: the entry schedule flattened into one in-order
// list of steps (calls inlined, while bodies repeated known_trip_count times, fusion groups as one
// step at their root, free ops dropped); every device runs the same list (SPMD). A step carries
// the collectives it reads directly or through free ops, and waits for them.
// The dependency rule and what is not modelled: docs/simulator.md#step-program
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/backend/program.h"
#include "compiler/ir/trip_count.h"
#include "sim/collective_catalog.h"
#include "sim/op_cost.h"

namespace podsim::sim {

// One distinct op of the program (an instruction or a fusion group).
struct OpInfo {
  std::string name;
  std::string op_name;
  std::string opcode;  // "fusion" for a group
  std::string shape;
  OpCost cost;              // compute ops
  int32_t collective = -1;  // CollectiveCatalog spec, collectives only
  // The synchronous collective it runs ("all-gather" for all-gather-start).
  std::string collective_kind;
  // A collective of a kind the program runs synchronously (CollectiveExecution): the compute
  // stream waits for it to end.
  bool synchronous = false;
};

struct Step {
  int32_t op = 0;  // index into StepProgram::ops
  // The collectives it reads (ordinals, ascending):
  // StepProgram::waits[wait_begin, wait_end).
  uint32_t wait_begin = 0;
  uint32_t wait_end = 0;
  bool collective = false;
};

// A while loop run from the entry computation (loop_key names it).
struct EntryLoop {
  int64_t key = 0;
  int64_t trips = 0;  // its known trip count (uncapped)
  int64_t steps = 0;  // steps it emitted, prologue and epilogue included
};
inline int64_t loop_key(compiler::CompId comp, compiler::InstrId id) {
  return (static_cast<int64_t>(comp) << 32) | static_cast<uint32_t>(id);
}

struct StepProgram {
  std::vector<OpInfo> ops;
  std::vector<Step> steps;
  std::vector<int32_t> collective_steps;  // ordinal -> step index
  std::vector<int32_t> waits;             // Step::wait_begin/wait_end index it
  int64_t unknown_trip_counts = 0;
  int64_t conditionals_first_branch = 0;  // conditionals run as their first branch
  double total_compute_s = 0;             // sum of compute step times (one device)
  std::vector<EntryLoop> entry_loops;     // in first-run order, each once
};

struct FlattenInputs {
  const compiler::SpmdProgram& program;
  OpCostModel& costs;
  CollectiveCatalog& collectives;
  // Guard against runaway unrolling; UserError beyond it.
  int64_t max_steps = 200'000'000;
  // Entry loops (by loop_key) run for at most this many iterations (the
  // simulator's steady-state loops, simulator.h); the rest are left out.
  std::unordered_map<int64_t, int64_t> iteration_caps = {};
};

StepProgram flatten_program(const FlattenInputs& inputs);

}  // namespace podsim::sim
