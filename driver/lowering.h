// Lowering of a workload onto the compiler's and the hardware model's option
// structs (typed enums in, typed options out): the training section (optimizer
// from its registry, remat), the compiler section (windowed einsum, loops) and
// the mesh's placement on the hardware. Also the names of run options as the
// command line spells them.
#pragma once

#include <string>

#include "compiler/compile.h"
#include "hw_models/config.h"
#include "hw_models/system.h"
#include "sim/simulator.h"
#include "workloads/model_builder.h"
#include "workloads/workload.h"

namespace podsim::driver {

// compiler: section -> the SPMD partitioner's options, with what the
// hardware decides (the overlap test's flops per byte, the latency in bytes).
compiler::SpmdOptions spmd_options(const workloads::CompilerSpec& spec,
                                   const hw::HardwareConfig& hardware);

// training: and compiler: sections -> CompileOptions. remat auto asks the
// compiler for the smallest recomputation that fits the device's HBM.
compiler::CompileOptions compile_options(const workloads::Workload& w,
                                         const workloads::BuiltModel& model,
                                         const hw::HardwareConfig& hardware);

// mesh: section -> the placement of the logical mesh on the hardware.
hw::MeshLayout mesh_layout(const workloads::MeshSpec& mesh);

// "fast" | "full"; UserError otherwise.
sim::Fidelity fidelity_from_name(const std::string& name);

}  // namespace podsim::driver
