// compiler::compile (docs/design.md data flow): annotated forward module ->
// training step (autodiff + optimizer, optional) -> propagate shardings ->
// partition (SPMD) -> fuse -> schedule -> memory plan -> SpmdProgram.
// Knows nothing about hardware: the HBM budget for remat "auto" comes in as
// a number.
#pragma once

#include <cstdint>
#include <optional>

#include "compiler/backend/program.h"
#include "compiler/spmd/partitioner.h"
#include "compiler/training/training_step.h"

namespace podsim::compiler {

struct CompileOptions {
  int64_t num_devices = 1;
  // nullopt: compile the module as it is (an inference step / an HLO file).
  std::optional<TrainingStepOptions> training = std::nullopt;
  // remat "auto": the smallest recomputation whose memory plan fits this
  // many bytes per device (XLA's rematerialization pass); 0 = no auto remat.
  bool remat_auto = false;
  int64_t hbm_budget_bytes = 0;
  // The SPMD partitioner's options (windowed einsum); num_partitions is
  // taken from num_devices.
  SpmdOptions spmd = {};
  // XLA's loop pipelining (program.h), carried to the simulator.
  LoopOptimizations loops = {};
};

// UserError for user-caused problems (unsupported op in a training graph,
// invalid sharding annotation, ...).
SpmdProgram compile(const Module& annotated, const CompileOptions& options);

// A module that already is one per-device program (module_mode.h), made an
// SpmdProgram without partitioning: XLA's fusions are kept as one kernel
// each (podsim fuses only a module that has none), an is_scheduled module
// keeps XLA's instruction order (else podsim schedules it), and the memory
// plan runs over that order. UserError when num_devices < 1.
SpmdProgram compile_as_is(const Module& per_device, int64_t num_devices);

}  // namespace podsim::compiler
