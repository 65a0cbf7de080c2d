// The compiler's entry points (docs/design.md data flow). compile: annotated
// forward module -> training step (autodiff + optimizer, optional) ->
// propagate shardings -> partition (SPMD) -> fuse -> schedule -> memory plan
// -> SpmdProgram. partition_module: `podsim partition`'s propagate ->
// partition -> optional numeric check. Knows nothing about hardware: the HBM
// budget for remat "auto" comes in as a number.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/backend/program.h"
#include "compiler/spmd/partitioner.h"
#include "compiler/spmd/verify.h"
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
  // Which collective kinds run asynchronously (program.h), carried to the simulator.
  CollectiveExecution collectives = {};
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

// What `podsim partition` asks of one global module.
struct PartitionRequest {
  SpmdOptions spmd = {};
  // XLA's allow_spmd_sharding_propagation_to_parameters / _to_output.
  bool propagate_to_parameters = true;
  bool propagate_to_output = true;
  // XLA's vectors and is_spmd (PropagationOptions::allow_to_* / is_spmd).
  std::vector<bool> allow_to_parameters;
  std::vector<bool> allow_to_output;
  bool is_spmd = true;
  bool propagate_only = false;  // stop after propagation: the module with every sharding
  // Check the program against the module with the reference interpreter:
  // at full shapes within verify_limit_bytes, else (unless
  // verify_full_only) at reduced shapes (spmd/verify.h, plan_verify).
  bool verify = false;
  double verify_limit_bytes = kDefaultVerifyLimitBytes;
  bool verify_full_only = false;
};

struct PartitionResult {
  Module module;          // the per-device program, or the propagated module (propagate_only)
  bool verified = false;  // the numeric check ran
  bool verify_ok = true;  // ... and found no mismatch
  // What the check says, one line each ("verify: ok (4 devices, ...)",
  // "verify: MISMATCH ..."), for stderr.
  std::vector<std::string> verify_lines;
};

// Verifies the module, drops stop-gradients (no gradient is taken here),
// propagates shardings over module.num_partitions() devices, then
// partitions and checks as `request` says. UserError for invalid input or
// a check over its limits.
PartitionResult partition_module(Module module, const PartitionRequest& request);

}  // namespace podsim::compiler
