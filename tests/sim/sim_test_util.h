// Shared helpers of the simulator tests: SpmdPrograms from HLO text (schedule
// = instruction order, no fusion) and small tpuv3-based systems.
#pragma once

#include <fmt/format.h>

#include <string>
#include <vector>

#include "compiler/backend/program.h"
#include "compiler/hlo/hlo_parser.h"
#include "hw_models/config.h"
#include "hw_models/system.h"
#include "sim/simulator.h"

namespace podsim::sim::testing {

// tpuv3: collectives run on link_bandwidth x link_efficiency per direction
// (656 Gbit/s x 1, docs/reference/hardware.md#ici-link-rate), one hop costs
// hop_latency_s.
inline constexpr double kLinkBandwidth = 8.2e10 * 1.0;
inline constexpr double kHopLatency = 1.0e-6;

inline compiler::SpmdProgram program_from_hlo(const std::string& text) {
  compiler::SpmdProgram program;
  program.module = compiler::parse_hlo(text);
  program.num_devices = program.module.num_partitions();
  return program;
}

// tpuv3 with the given overrides, the mesh laid row-major on the default slice.
inline hw::System make_system(std::vector<int64_t> mesh, const hw::Overrides& overrides = {},
                              std::vector<int64_t> physical = {}) {
  hw::MeshLayout layout;
  layout.mesh_shape = std::move(mesh);
  layout.physical = std::move(physical);
  return hw::System(hw::load_hardware("tpuv3", overrides), layout);
}

// A 1-D torus of `n` chips, one device per chip: the full pod, so its ring
// closes over the wraparound link and collectives take their closed forms.
inline hw::System ring_system(int64_t n) {
  return make_system({n}, {{"ici.pod_dims", fmt::format("[{}]", n)},
                           {"ici.pod_wraparound", "[true]"},
                           {"chip.devices_per_chip", "1"}});
}

inline Timeline run(const compiler::SpmdProgram& program, const hw::System& system,
                    Fidelity fidelity = Fidelity::kFast, bool trace = false) {
  SimOptions options;
  options.fidelity = fidelity;
  options.record_trace = trace;
  return simulate(program, system, options);
}

// The reference of the steady-state loop shortcut: every loop iteration
// simulated (the CLI's --every-iteration).
inline Timeline run_every_iteration(const compiler::SpmdProgram& program,
                                    const hw::System& system,
                                    Fidelity fidelity = Fidelity::kFast) {
  SimOptions options;
  options.fidelity = fidelity;
  options.steady_state_loops = false;
  return simulate(program, system, options);
}

}  // namespace podsim::sim::testing
