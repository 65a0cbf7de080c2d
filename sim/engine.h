// The SystemC run of a StepProgram on one or more devices (sim::simulate drives it). Per device a
// compute stream walks the steps in order and a collective stream runs the issued collectives (up
// to in_flight_per_kind of each kind at once; the compute stream waits for a synchronous one to
// end); collective DMAs take a share of HBM bandwidth from compute. Per device compute + exposed
// communication + idle = the device's finish time. The model:
// docs/simulator.md#engine-streams-hbm-contention-accounting
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "hw_models/ici/topology.h"
#include "sim/collective_catalog.h"
#include "sim/step_program.h"
#include "sim/symmetry.h"
#include "sim/timeline.h"

namespace podsim::sim {

struct DeviceAccount {
  double finish_s = 0;
  double compute_s = 0;
  double mxu_s = 0, vpu_s = 0, hbm_s = 0, overhead_s = 0;
  // Part of hbm_s: kernels stretched because collective DMAs were using
  // the device's HBM at the same time.
  double hbm_contention_s = 0;
  double exposed_s = 0;
  double idle_s = 0;
  // Per StepProgram op, summed over its executions: the time its stream
  // was busy with it (compute ops: with any HBM contention).
  std::vector<double> op_busy_s;
  // Per collective op (other entries stay 0).
  std::vector<double> collective_exposed_s;
};

// A chip variant (per-chip hardware overrides, hw::System::chip_variants) as its devices run: per
// StepProgram op its OpCost on the variant's own config (the kernel's duration, its time split, its
// HBM time under contention), and its hbm.bandwidth (collective DMAs take their share of it).
struct VariantCosts {
  std::vector<OpCost> ops;
  double hbm_bandwidth = 0;
};

struct EngineInputs {
  const StepProgram& program;
  CollectiveCatalog& collectives;
  const hw::Topology& topology;
  Fidelity fidelity = Fidelity::kFast;
  int64_t devices = 1;                    // program devices
  std::vector<double> fast_collective_s;  // fast: per catalog spec
  int64_t in_flight = 1;                  // ici.collectives_in_flight
  int64_t in_flight_per_kind = 1;         // ici.collectives_in_flight_per_kind
  bool record_trace = false;
  // Fraction of steps x simulated devices passed so far (0..1, monotone,
  // about every 1%); the simulator adds the final 1.
  std::function<void(double)> progress;
  // hbm.bandwidth of a device (B/s; a chip variant's: VariantCosts::hbm_bandwidth): the
  // collectives transferring on a device take their DMA traffic (CollectiveSpec::dma_hbm_bytes)
  // out of it and the compute kernel runs on the rest. 0: no contention.
  double hbm_bandwidth = 0;
  // When record_trace: the window and the event limit, and per simulated
  // device whether it is traced.
  TraceSelection trace;
  std::vector<char> traced;
  // Full mode: sum per ICI link the durations of the transfers it carried
  // (EngineResult::link_busy_s), for the steady-state test of whole-machine
  // repeat (simulator.cc).
  bool link_totals = false;
  // Set (by the progress callback) to stop the run at the next progress
  // report: the result then has stopped = true and no accounts.
  const bool* stop = nullptr;
  // Per program device: the chip variant it runs on (an index into `variants`; -1: the machine's
  // chip, StepProgram::ops costs and hbm_bandwidth). Empty: every device the machine's. Devices of
  // different variants are never simulated as one symmetry class.
  std::vector<int32_t> device_variant;
  std::vector<VariantCosts> variants;
  // Full mode: when set and applied, only its representatives are simulated (EngineResult::devices
  // is per class, in its order) and each orbit of translated groups runs as one fabric job
  // carrying all their link loads (docs/simulator.md#symmetry-classes-full-fidelity).
  const SymmetryClasses* symmetry = nullptr;
};

struct EngineResult {
  // Simulated devices: 1 in fast mode; in full mode every device, or one per symmetry class.
  std::vector<DeviceAccount> devices;
  std::vector<TraceEvent> events;
  std::vector<LinkLoad> link_loads;
  int64_t trace_events_seen = 0;
  bool trace_over_limit = false;
  double trace_cut_s = -1;
  uint64_t kernel_events = 0;
  // When link_totals: per link id, the summed duration of the phase
  // transfers it carried (contention stretches them).
  std::vector<double> link_busy_s;
  bool stopped = false;
};

// Runs the SystemC kernel until the step ends on every simulated device.
// Not reentrant: the SystemC kernel is one per process.
EngineResult run_engine(const EngineInputs& inputs);

}  // namespace podsim::sim
