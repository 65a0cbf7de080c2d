// sim::simulate (docs/design.md): runs one SpmdProgram step on a hw::System with the SystemC
// kernel driving time. Per device a compute stream executes the schedule in order; collectives
// run on async streams and overlap with independent compute. Fast (default): one representative
// device, each distinct collective timed once with its sibling groups' contention, cached; falls
// back to full where it cannot be exact. Full: every device and every ICI link.
// Pieces: op_cost.h, collective_catalog.h, step_program.h, engine.h, fabric.h. Where fast is not
// exact: docs/simulator.md#fast-and-full-fidelity
// Not thread-safe: the SystemC kernel is one per process.
#pragma once

#include <functional>

#include "compiler/backend/program.h"
#include "hw_models/system.h"
#include "sim/timeline.h"

namespace podsim::sim {

struct SimOptions {
  Fidelity fidelity = Fidelity::kFast;
  bool record_trace = false;
  TraceSelection trace;  // what the trace keeps, when record_trace
  // Called now and then with the fraction done (0..1), for a progress line.
  std::function<void(double)> progress;
  // Without a trace: a while loop of the entry (>= 8 iterations) is
  // simulated until its iteration time is steady, the rest counted at that
  // time (simulator.cc steady_state; docs/loops.md). Full fidelity (asked
  // for, not a fallback from fast) tests the whole machine: every device's
  // iteration time and every link's load. false: every iteration.
  bool steady_state_loops = true;
  // Wall seconds the simulation may take (0: no limit). Once 2 % of it has
  // run, for a second or a quarter of the limit, a run whose estimate
  // (elapsed / fraction done)
  // exceeds the limit stops and throws UserError with the estimate. The
  // SystemC kernel cannot run again in the process after that.
  double time_limit_s = 0;
  // Full fidelity: simulate one device per symmetry class (sim/symmetry.h) where translations of
  // the torus map devices onto each other alike; false: every device (the reference).
  bool symmetry = true;
};

Timeline simulate(const compiler::SpmdProgram& program, const hw::System& system,
                  const SimOptions& options);

}  // namespace podsim::sim
