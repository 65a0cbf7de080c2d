// Post-partitioning cleanup (XLA runs the same passes after SPMD
// partitioning): custom-call "Sharding" markers left in the per-device
// program are replaced by their operand, and instructions whose value
// reaches no root (dead code, e.g. the gradient of an input nobody reads,
// and the collectives feeding only it) are removed. Parameters always stay.
// Applied to control computations (entry, while bodies/conditions, callees).
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/ir/module.h"

namespace podsim::compiler {

struct CleanupStats {
  int64_t markers_removed = 0;            // custom-call markers forwarded to their operand
  int64_t dead_instructions_removed = 0;  // besides the markers
};

CleanupStats remove_markers_and_dead_code(Module& module);

// Replaces every custom-call kStopGradientTarget (a gradient barrier that
// autodiff has already honoured) by its operand, before propagation; other
// instructions stay, dead or not. Returns how many were removed.
int64_t remove_stop_gradients(Module& module);

// Computations that run as programs: the entry and, transitively, while
// bodies/conditions and call targets (not reducers applied per element).
std::vector<bool> control_computations(const Module& module);

}  // namespace podsim::compiler
