// `podsim partition` below the command line: what it works on (an HLO file
// as written, or a workload's forward model with its YAML shardings and its
// `compiler:` section for its hardware; the training step is `podsim run`'s
// business), the device count (--mesh, the module's own, or inferred), the
// refusal of a module XLA already partitioned, then one call to
// compiler::partition_module.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "compiler/compile.h"
#include "compiler/module_mode.h"

namespace podsim::driver {

struct PartitionJob {
  std::string input;                         // workload YAML or HLO text module
  std::vector<std::string> overrides;        // --set key=value (workloads only)
  std::string mesh;                          // --mesh "x=4,y=2"; empty: the module's own count
  std::optional<compiler::ModuleMode> mode;  // --mode; nullopt: auto
  // Propagation, propagate-only and verify choices; `spmd` is filled here.
  compiler::PartitionRequest request;
};

// "--mesh x=4,y=2" -> 8 devices (the product; the names only serve readability).
int64_t mesh_device_count(const std::string& mesh);

// Runs the job; `note` receives remarks for stderr (one line each, without
// the newline) as they arise. UserError for bad input.
compiler::PartitionResult partition_workload(const PartitionJob& job,
                                             const std::function<void(const std::string&)>& note);

}  // namespace podsim::driver
