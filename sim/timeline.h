// Timeline: what one simulated training step produced (docs/design.md data flow:
// sim::simulate -> Timeline -> reports). Plain values; reports only read.
//
// Time accounting of the representative device (fast) or of the slowest
// device (full), which sums to the step time:
//   step_time_s = compute_s + exposed_communication_s + idle_s
//   compute_s   = time the compute stream is busy, split by what bounds each
//                 op (MXU, VPU, HBM, fixed overhead)
//   exposed_communication_s = time the compute stream waits for a collective
//   idle_s      = any other wait (dependencies on other devices in full mode)
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/trip_count.h"
#include "hw_models/core/core_model.h"

namespace podsim::sim {

enum class Fidelity { kFast, kFull };
const char* fidelity_name(Fidelity fidelity);

// One instruction (or fusion) of the per-device program, summed over its
// executions (while-loop iterations) on the reported device.
struct OpRecord {
  std::string name;     // instruction name (fusion: its root)
  std::string op_name;  // model-level name (metadata op_name)
  std::string opcode;   // XLA opcode, "fusion" for a fused group
  std::string shape;    // result shape text
  int64_t executions = 0;
  double seconds = 0;  // busy time on its stream, all executions
  double flops = 0;    // executed FLOPs, all executions
  double hbm_bytes = 0;
  hw::Bound bound = hw::Bound::kOverhead;  // compute ops
  bool collective = false;
  double collective_bytes = 0;  // per device, as in hw::CollectiveQuery
  double exposed_seconds = 0;   // collectives: compute-stream wait they caused
  // Collectives across slices: seconds of DCN transfer (uncontended, all executions) and the
  // share of exposed_seconds that is DCN time (exposed x dcn / busy of one execution).
  double dcn_seconds = 0;
  double exposed_dcn_seconds = 0;
};

struct CollectiveSummary {
  std::string kind;    // "all-reduce", "all-gather", ...
  int64_t count = 0;   // executions
  double bytes = 0;    // per device, summed
  double seconds = 0;  // stream busy time, summed
  double dcn_seconds = 0;  // of it, DCN transfer (OpRecord::dcn_seconds summed)
};

// Chrome trace-event material (reports/ writes the JSON).
struct TraceEvent {
  int64_t device = 0;
  std::string track;  // "compute", "collectives <kind>"
  std::string name;
  double start_s = 0;
  double duration_s = 0;
  std::vector<std::pair<std::string, std::string>> args;  // op_name, opcode, shape...
  std::vector<std::pair<std::string, double>> numbers;    // flops, bytes...: numeric args
  // HBM traffic while it runs (B/s): a kernel's bytes over its time, a
  // collective's DMA bytes over its run; the trace's HBM counter sums them.
  double hbm_bytes_per_s = 0;
  // A collective's run on the fabric (ordinal and device group), the same
  // on every member device: the trace joins them with a flow; -1 = none.
  int64_t flow = -1;
};

// A link carrying a collective's bytes: the fraction of its bandwidth used
// from start_s for duration_s (the trace's per-link counter sums them).
struct LinkLoad {
  int64_t device = 0;  // the device whose chip (or core, on-chip) sends on it
  std::string link;    // "ici 3 chip 0->1 dim 0+"
  double start_s = 0;
  double duration_s = 0;
  double utilisation = 0;
};

// Which part of the step a trace keeps (SimOptions::trace). Recording is
// bounded: at most max_events events and link loads are kept. With a
// window given, more in it marks the trace over the limit (the count goes
// on, nothing more is kept); without one, the trace stops at the time the
// limit is reached (Timeline::trace_cut_s).
struct TraceSelection {
  std::vector<int64_t> devices;  // empty: every simulated device
  int64_t sample = 0;            // > 0: this many devices evenly spread instead
  double window_begin_s = 0;
  double window_end_s = std::numeric_limits<double>::infinity();
  bool window_given = false;
  int64_t max_events = 0;     // 0: unbounded
  double bytes_per_item = 0;  // for messages: an item's JSON size (reports/trace.h)
};

struct Timeline {
  Fidelity fidelity = Fidelity::kFast;
  int64_t devices = 0;            // devices of the program
  int64_t devices_simulated = 0;  // 1 in fast mode
  std::string fallback_reason;    // why fast fell back to full, if it did
  // Fast mode kept although not exact (too big to fall back to full): why.
  std::string approximation_note;
  // Chips that differ (per-chip hardware overrides): which and in what (hw::System
  // chip_variants_text). Every device was simulated, each with its own compute time.
  std::string per_device;
  // Full fidelity: which devices were simulated (symmetry classes of torus translates, one
  // device each; or per device, and why). Exact either way; empty in fast mode.
  std::string simulated_devices;
  double step_time_s = 0;
  double compute_s = 0;
  double mxu_bound_s = 0;
  double vpu_bound_s = 0;
  double hbm_bound_s = 0;
  double hbm_contention_s = 0;  // of hbm_bound_s: kernels slowed by collective DMAs (engine.h)
  double overhead_s = 0;
  double exposed_communication_s = 0;
  // Multi-slice runs: of exposed_communication_s, the DCN share (OpRecord::exposed_dcn_seconds
  // summed), and the DCN transfer time of every collective run (OpRecord::dcn_seconds summed).
  double exposed_dcn_s = 0;
  double dcn_busy_s = 0;
  double idle_s = 0;
  double executed_flops_per_device = 0;
  double executed_matmul_flops_per_device = 0;  // of it, the MXU's
  int64_t unknown_trip_counts = 0;              // while loops run once: trip count not derived
  int64_t conditionals_first_branch = 0;        // conditionals run as their first branch
  std::vector<OpRecord> ops;                    // sorted by seconds, descending
  std::vector<CollectiveSummary> collectives;
  std::vector<TraceEvent> events;  // only when SimOptions::record_trace
  std::vector<LinkLoad> link_loads;
  std::vector<int64_t> traced_devices;
  TraceSelection trace_selection;
  int64_t trace_events_seen = 0;  // in the selection, kept or not
  bool trace_over_limit = false;  // window given and more than max_events in it
  double trace_cut_s = -1;        // no window: the trace ends here (limit reached)
  uint64_t kernel_events = 0;     // SystemC events processed (bench: events/s)
  double simulate_wall_s = 0;
};

}  // namespace podsim::sim
