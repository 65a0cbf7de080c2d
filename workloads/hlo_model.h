// model.kind: hlo (hlo_model.cc): the module of an HLO text file with its own
// annotations, and its ModelInfo from the module's parameters and dots.
#pragma once

#include "workloads/model_builder.h"

namespace podsim::workloads {

BuiltModel build_hlo_model(const Workload& workload, compiler::DeviceMesh mesh);

// ModelInfo of a global (not yet partitioned) module: its parameters and its
// dots' FLOPs (x3 for a training step), tokens as given.
ModelInfo hlo_model_info(const compiler::Module& module, bool training, int64_t tokens_per_step);

// Parameters of a per-device module (run as it is): each entry parameter's
// per-device elements times the distinct tiles its sharding splits it into
// (replicated or unannotated: once). Floating-point parameters only.
int64_t per_device_module_parameters(const compiler::Module& module);

}  // namespace podsim::workloads
