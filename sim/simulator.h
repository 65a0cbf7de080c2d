// sim::simulate (docs/design.md): runs one SpmdProgram step on a hw::System with
// the SystemC kernel driving time. Per device a compute stream executes the
// schedule in order; collectives run on async streams and overlap with
// independent compute; a dependency or a busy resource makes an op wait.
//   fast (default): one representative device; each distinct collective
//     (kind, bytes, placed group) is timed once on the ICI model with the
//     contention of the collective's other groups running at the same time,
//     and cached. Falls back to full where it cannot be exact.
//   full: every device and every ICI link; link transfers of concurrent
//     collectives contend on shared links.
// Pieces: op_cost.h (op -> core model query), collective_catalog.h (groups,
// placement, plans, fast timing), step_program.h (flattened schedule and its
// dependency rule), engine.h (SystemC streams), fabric.h (full-mode links).
//
// When fast is not exact (and what it does):
//   - device groups of one collective that alone take different times on the
//     placement (e.g. explicit groups of unequal spread, a torus slice without
//     wraparound whose groups sit differently): detected per collective; fast
//     falls back to full (Timeline::fallback_reason) when devices x steps is
//     at most 2e7, else stays fast charging every group the time of all
//     groups at once, i.e. the slowest (Timeline::approximation_note);
//   - groups whose siblings load some groups' links more than others: all
//     groups are charged the merged plan's time (its most loaded link), so
//     fast is pessimistic for the less loaded groups; not detected;
//   - fast times a merged plan by max-min fair sharing between flows (small
//     plans) or analytically (big ones), full by fluid sharing between phase
//     jobs; on symmetric configs the two agree (tests: within 2%, exact on
//     rings), with many competing flows of different routes fair sharing can
//     be slower than the fluid phase model;
//   - collectives of different instructions overlap as far as
//     ici.collectives_in_flight allows (engine.h), each once the collectives
//     it reads are done (step_program.h); fast mode shares the links of one
//     device's concurrent collectives (collective_sharing.h), full mode also
//     those of different devices' collectives that run out of step.
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
  // Fast fidelity without a trace: a while loop of the entry (>= 8
  // iterations) is simulated until its iteration time is steady, the rest
  // counted at that time (simulator.cc steady_state; docs/loops.md). Full
  // fidelity always runs every iteration.
  bool steady_state_loops = true;
};

Timeline simulate(const compiler::SpmdProgram& program, const hw::System& system, const SimOptions& options);

}  // namespace podsim::sim
