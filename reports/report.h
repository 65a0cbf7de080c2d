// Report: what `podsim run` tells the user about one simulated training step
// (docs/design.md "Command line", run --format json). A plain value built by
// summarize() from the simulator's Timeline, the compiled program's memory
// plan and statistics, and the model-level facts of the workload; the
// formatters (reports/formats.h) only print it.
//
// Utilization (PaLM, Chowdhery et al. 2022, appendix B):
//   MFU = model FLOPs per step / (step time x devices x peak FLOP/s per device)
//   HFU = executed FLOPs per step (incl. remat and padding) / (same)
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/backend/program.h"
#include "reports/parts.h"
#include "sim/timeline.h"
#include "workloads/model_builder.h"

namespace podsim::reports {

// Seconds of the step by what the reported device's compute stream did.
// compute = mxu_bound + vpu_bound + memory_bound + overhead, and
// step = compute + exposed_communication + idle (sim/timeline.h).
struct TimeBreakdown {
  double compute_s = 0;
  double mxu_bound_s = 0;
  double vpu_bound_s = 0;
  double memory_bound_s = 0;  // HBM-bound ops
  // Of memory_bound_s: kernels stretched while collective DMAs used the
  // device's HBM (sim/engine.h).
  double hbm_contention_s = 0;
  double overhead_s = 0;
  double exposed_communication_s = 0;
  // Multi-slice runs (0 on one slice): of exposed_communication_s, the DCN share; and the DCN
  // transfer time of every collective run, hidden or not (sim/timeline.h).
  double exposed_dcn_s = 0;
  double dcn_busy_s = 0;
  double idle_s = 0;
};

// One row of the memory breakdown at the peak, in a fixed order.
struct MemoryPart {
  std::string name;  // json key: "parameters", "optimizer_state", ...
  int64_t bytes = 0;
};

// One buffer live at the memory peak (compiler/backend/memory_plan.h).
struct PeakBuffer {
  std::string name;      // the producing instruction
  std::string op_name;   // its model-level name
  std::string shape;     // per device, XLA text
  std::string sharding;  // the producer's sharding attribute ("" if none)
  std::string role;      // memory_role_key: "parameters", "activations", ...
  std::string pass;      // classify_op_name(op_name).pass: "forward", "backward", ...
  int64_t bytes = 0;
};

// Where and why the per-device memory peaks: the breakdown (Report::
// memory_breakdown) is taken at this one point of the step's schedule.
struct MemoryPeak {
  std::string instruction;  // the entry instruction running at the peak
  std::string op_name;
  std::string pass;
  int64_t schedule_position = 0;        // of `instruction` in the entry's schedule
  int64_t schedule_length = 0;          // entry instructions
  int64_t live_buffers = 0;             // buffers live at the peak
  std::vector<PeakBuffer> top_buffers;  // the largest, largest first
  // Live bytes over the step: the maximum over each bucket of schedule
  // positions [timeline_positions[i], timeline_positions[i + 1]) (the last
  // up to schedule_length), at most SummaryInput::memory_timeline_points
  // buckets, so the peak is kept.
  std::vector<int64_t> timeline_positions;
  std::vector<int64_t> timeline_bytes;
};

struct CollectiveStats {
  std::string kind;          // "all-reduce", "all-gather", ...
  int64_t count = 0;         // executions in the step (simulated)
  int64_t static_count = 0;  // instructions the partitioner emitted
  double bytes = 0;          // per device, summed over executions
  double seconds = 0;        // collective-stream busy time
};

struct TopOp {
  std::string name;
  std::string op_name;
  std::string opcode;
  std::string shape;
  int64_t executions = 0;
  double seconds = 0;
  double step_fraction = 0;  // seconds / step time
  double flops = 0;
  std::string bound;           // "mxu" | "vpu" | "hbm" | "overhead" | "collective"
  double bytes = 0;            // collectives: per device; compute ops: HBM traffic
  double exposed_seconds = 0;  // collectives only
  double dcn_seconds = 0;      // collectives across slices: DCN transfer time (busy, uncontended)
  int64_t instances = 1;       // op groups: ops merged (the same op in that many layers)
  // What the kernel computes: kernel_label, or for a fusion that holds a
  // matmul "fusion(dot+add)" (its dot or convolution, then its root).
  std::string kernel;
};

// The kernel an op runs: "fusion(add)" for a fusion whose root is add.16
// (the root's name without its number), else the opcode ("dot"). Op groups
// keep ops with different kernels apart.
std::string kernel_label(const std::string& opcode, const std::string& name);

struct CompileSummary {
  int64_t instructions_annotated = 0;
  int64_t instructions_partitioned = 0;
  int64_t full_replications = 0;
  int64_t default_fallbacks = 0;
  std::string remat_applied;
  double recomputed_flops = 0;
};

// Custom-calls whose target podsim does not know (sim/custom_call_cost.h):
// costed by the bytes they read and write.
struct UnknownCustomCalls {
  int64_t count = 0;                 // instructions
  double seconds = 0;                // their time in the step
  std::vector<std::string> targets;  // distinct, sorted
};

struct Report {
  std::string workload;
  // An HLO module run directly: "partition" or "as-is" (module_mode.h);
  // empty for a workload file.
  std::string mode;
  // What the numbers rest on that the input did not say (a loop's unknown
  // trip count, a conditional's branch, the MFU numerator of an as-is run,
  // uneven sharding's padding, the collectives behind a large exposed
  // communication time).
  std::vector<std::string> notes;
  UnknownCustomCalls unknown_custom_calls;
  std::string hardware;
  std::string fidelity;  // "fast" | "full"
  std::string fallback_reason;
  std::string approximation_note;  // fast kept although not exact: why
  // Chips differ (per-chip hardware overrides): which and in what; the run simulated every device
  // with its own compute time (sim::Timeline::per_device). Empty: every chip alike.
  std::string per_device;
  // Full fidelity: the devices simulated (sim::Timeline::simulated_devices).
  std::string simulated_devices;
  int64_t devices = 0;
  int64_t devices_simulated = 0;
  int64_t parameters = 0;
  int64_t tokens_per_step = 0;

  double step_time_s = 0;
  double tokens_per_second = 0;
  double model_flops_per_step = 0;
  double executed_flops_per_step = 0;  // all devices
  double peak_flops_per_device = 0;
  double model_flops_per_second_per_device = 0;  // achieved, MFU numerator rate
  double mfu = 0;
  double hfu = 0;

  int64_t peak_memory_bytes = 0;  // per device
  double hbm_capacity_bytes = 0;  // per device
  bool fits_in_memory = true;
  std::vector<MemoryPart> memory_breakdown;  // every role, fixed order, at the peak
  MemoryPeak memory_peak;

  TimeBreakdown time;
  std::vector<CollectiveStats> collectives;  // every kind, fixed order
  std::vector<TopOp> top_ops;                // compute ops by time
  std::vector<TopOp> top_collectives;        // collectives by time
  // The same, with the ops that differ only in their layer summed
  // (op_name_pattern, opcode, name without its number, shape and bound
  // equal; the group's name is its longest member's): where the time goes in
  // a model of many identical layers, each of whose ops is a small share.
  std::vector<TopOp> top_op_groups;
  std::vector<TopOp> top_collective_groups;
  PartsSummary parts;  // time by pass and component (parts.h)
  CompileSummary compile;

  double compile_wall_s = 0;
  double simulate_wall_s = 0;
};

struct SummaryInput {
  const sim::Timeline* timeline = nullptr;
  const compiler::SpmdProgram* program = nullptr;
  // The module as given, with its sharding annotations, before partitioning
  // (optional): uneven shardings found there get a note with their padding.
  const compiler::Module* annotated = nullptr;
  workloads::ModelInfo model;
  std::string workload_name;
  std::string hardware_name;
  std::string mode;                  // Report::mode
  double peak_flops_per_device = 0;  // hw::peak_matmul_flops_per_device
  double hbm_capacity_bytes = 0;     // per device
  double compile_wall_s = 0;
  double simulate_wall_s = 0;
  int top_n = 10;                    // rows of top_ops, top_collectives and their groups
  int memory_top_n = 10;             // MemoryPeak::top_buffers
  int memory_timeline_points = 200;  // MemoryPeak timeline buckets
};

Report summarize(const SummaryInput& input);

// The collective kinds and memory roles every report lists (zeros included),
// so csv columns are the same for every run.
const std::vector<std::string>& collective_kinds();
std::string memory_role_key(compiler::ValueRole role);

}  // namespace podsim::reports
