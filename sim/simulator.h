// sim::simulate (DESIGN.md): runs one SpmdProgram step on a hw::System with
// the SystemC kernel driving time. Per device a compute stream executes the
// schedule in order; collectives run on async streams and overlap with
// independent compute; a dependency or a busy resource makes an op wait.
//   fast (default): one representative device; each distinct collective
//     (kind, bytes, placed group) is timed once on the ICI model with the
//     contention of the collective's other groups running at the same time,
//     and cached. Falls back to full where it cannot be exact.
//   full: every device and every ICI link; link transfers of concurrent
//     collectives contend on shared links.
#pragma once

#include <functional>

#include "compiler/pipeline/program.h"
#include "hw_models/system.h"
#include "sim/timeline.h"

namespace podsim::sim {

struct SimOptions {
  Fidelity fidelity = Fidelity::kFast;
  bool record_trace = false;
  // Called now and then with the fraction done (0..1), for a progress line.
  std::function<void(double)> progress;
};

Timeline simulate(const compiler::SpmdProgram& program, const hw::System& system, const SimOptions& options);

}  // namespace podsim::sim
