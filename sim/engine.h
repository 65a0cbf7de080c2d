// The SystemC run of a StepProgram on one or more devices (sim::simulate
// drives it; see simulator.h for the model).
//
// Per simulated device two method processes: the compute stream walks the
// steps in order (an op holds it for its cost; a collective step is issued
// to the collective stream and the walk goes on; an op whose operands wait
// for a collective blocks until the collective stream has finished it) and
// the collective stream runs the issued collectives: up to
// in_flight_per_kind of each kind at once, in issue order within a kind,
// different kinds concurrently (XLA's latency-hiding scheduler's per-kind
// overlap limits). Fast mode gives each collective its cached duration,
// stretched while others share its links (collective_sharing.h); full mode
// makes the members of each device group meet (the group starts when the
// last member is ready) and runs the group's plan on the shared Fabric,
// whose link-level fair sharing slows concurrent collectives the same way.
//
// Accounting per device, from SystemC time: the compute stream is always
// busy (compute), waiting for a collective (exposed communication) or, in
// full mode, waiting while that collective itself waited for the group's
// other members (idle); the three sum to the device's finish time.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "hw_models/ici/topology.h"
#include "sim/collective_catalog.h"
#include "sim/step_program.h"
#include "sim/timeline.h"

namespace podsim::sim {

struct DeviceAccount {
  double finish_s = 0;
  double compute_s = 0;
  double mxu_s = 0, vpu_s = 0, hbm_s = 0, overhead_s = 0;
  double exposed_s = 0;
  double idle_s = 0;
  // Per collective op (StepProgram op index; other entries stay 0).
  std::vector<double> collective_busy_s;
  std::vector<double> collective_exposed_s;
};

struct EngineInputs {
  const StepProgram& program;
  CollectiveCatalog& collectives;
  const hw::Topology& topology;
  Fidelity fidelity = Fidelity::kFast;
  int64_t devices = 1;                      // program devices
  std::vector<double> fast_collective_s;    // fast: per catalog spec
  int64_t in_flight = 1;                    // ici.collectives_in_flight
  int64_t in_flight_per_kind = 1;           // ici.collectives_in_flight_per_kind
  bool record_trace = false;
  std::function<void(double)> progress;
};

struct EngineResult {
  std::vector<DeviceAccount> devices;  // simulated devices (1 in fast mode)
  std::vector<TraceEvent> events;
  uint64_t kernel_events = 0;
};

// Runs the SystemC kernel until the step ends on every simulated device.
// Not reentrant: the SystemC kernel is one per process.
EngineResult run_engine(const EngineInputs& inputs);

}  // namespace podsim::sim
