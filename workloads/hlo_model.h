// model.kind: hlo (hlo_model.cc): the module of an HLO text file with its own
// annotations, and its ModelInfo from the module's parameters and dots.
#pragma once

#include "workloads/model_builder.h"

namespace podsim::workloads {

BuiltModel build_hlo_model(const Workload& workload, compiler::DeviceMesh mesh);

}  // namespace podsim::workloads
