// Full-fidelity ICI fabric: the link transfers of every running collective group share the links
// over time. Include only from .cc files (SystemC). A phase is one fluid transfer job (loads x
// repeat) then a pure delay (repeat x latency); concurrent jobs share links by weighted max-min
// fairness (progressive filling), recomputed whenever a job starts or finishes.
// docs/simulator.md#fabric-full-fidelity
#pragma once

#include <systemc>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "hw_models/ici/collectives.h"
#include "hw_models/ici/topology.h"

namespace podsim::sim {

// One collective instance on one device group (full mode).
struct GroupRun {
  const hw::CollectivePlan* plan = nullptr;
  int32_t op = -1;       // StepProgram op, for traces
  int64_t expected = 0;  // members
  int64_t arrived = 0;
  int64_t released = 0;
  double start_s = 0;  // when the last member arrived
  double end_s = 0;
  bool started = false;
  bool done = false;
  // The members' collective streams, woken when the run is done.
  std::vector<sc_core::sc_event*> member_wakes;
};

struct LinkTraceHook {
  // (link, op, start_s, duration_s, bytes the phase moved on the link);
  // empty = no ICI trace.
  std::function<void(hw::LinkId, int32_t, double, double, double)> on_transfer;
};

class Fabric {
 public:
  Fabric(const hw::Topology& topology, LinkTraceHook hook, std::function<double()> now_s);

  // A group whose members have all arrived starts its first phase now.
  void start(GroupRun* run);
  // The fabric's method process body.
  void on_wake();
  uint64_t activations() const { return activations_; }

 private:
  struct Job {
    GroupRun* run = nullptr;
    size_t phase = 0;
    bool in_latency = false;
    double remaining = 1;  // fraction of the transfer left
    double rate = 0;       // fraction per second
    double transfer_start_s = 0;
    double latency_until_s = 0;
  };

  void begin_phase(Job& job, double now);
  void advance(double now);
  void assign_rates();
  const hw::Phase& phase_of(const Job& job) const { return job.run->plan->phases[job.phase]; }

  const hw::Topology& topology_;
  LinkTraceHook hook_;
  std::function<double()> now_s_;
  std::vector<Job> jobs_;
  double last_update_s_ = 0;
  sc_core::sc_event wake_;
  uint64_t activations_ = 0;
  // Scratch per link for assign_rates.
  std::vector<double> residual_, weight_;
  std::vector<std::vector<int32_t>> jobs_on_link_;
};

}  // namespace podsim::sim
