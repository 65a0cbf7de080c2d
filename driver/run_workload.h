// `podsim run` end to end (docs/design.md data flow): workload YAML -> hardware
// System -> model builder -> compiler::compile -> sim::simulate -> Report.
// Every user-caused problem on the way is a podsim::UserError.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compiler/backend/program.h"
#include "compiler/compile.h"
#include "compiler/module_mode.h"
#include "hw_models/config.h"
#include "hw_models/system.h"
#include "reports/report.h"
#include "sim/timeline.h"
#include "workloads/model_builder.h"
#include "workloads/workload.h"

namespace podsim::driver {

// `podsim run MODULE.hlo`: an XLA HLO module run without a workload file.
struct HloRunOptions {
  std::string hardware = "tpuv3";            // preset name or hardware YAML
  std::string mesh;                          // "x=4,y=2"; empty: the module's own device count
  int64_t tokens = 0;                        // tokens per step (for tokens/s); 0 = unknown
  int64_t slices = 1;  // slices the devices split into (device id = slice x per slice + id)
  std::optional<compiler::ModuleMode> mode;  // nullopt: decided from the module
};

// True for a path that names an HLO module rather than a workload YAML.
bool is_hlo_module_path(const std::string& path);

// "x=4,y=2" -> {{"x",4},{"y",2}}; UserError naming --mesh otherwise.
std::vector<std::pair<std::string, int64_t>> parse_mesh_flag(const std::string& mesh);

struct RunRequest {
  std::string workload_path;
  std::vector<std::string> overrides;  // --set key=value
  HloRunOptions hlo;                   // when workload_path is an HLO module
  sim::Fidelity fidelity = sim::Fidelity::kFast;
  bool steady_state_loops = true;  // sim::SimOptions::steady_state_loops
  bool symmetry = true;            // sim::SimOptions::symmetry
  double time_limit_s = 0;         // sim::SimOptions::time_limit_s
  bool record_trace = false;
  sim::TraceSelection trace;  // when record_trace: devices, window, event limit
  int top_n = 10;
  // Called with the stage ("loading", "compiling", "simulating", "reporting")
  // and the fraction of that stage done (0..1); may be empty.
  std::function<void(const std::string& stage, double fraction)> progress;
};

struct RunResult {
  workloads::Workload workload;
  reports::Report report;
  sim::Timeline timeline;  // events only when record_trace
};

RunResult run_workload(const RunRequest& request);

// The two halves of run_workload, for callers that simulate one compiled
// program on several hardware variants (--serve, calibrate --fit). The
// program depends on the hardware only through the compile options (remat
// auto's HBM budget, the overlap test's flops per ICI byte): a variant that
// keeps them needs no new compile.
struct CompiledWorkload {
  workloads::Workload workload;
  // The hardware compiled for, mesh placed; on the heap (a System is not moved).
  std::unique_ptr<hw::System> system;
  workloads::BuiltModel model;
  compiler::SpmdProgram program;
  double compile_wall_s = 0;
  // Programs compiled for variants that change the compile options, most
  // recent first, at most kVariantProgramsKept: a compass search polling a
  // centre and centre +- step of a link rate compiles once per value.
  struct VariantProgram {
    compiler::CompileOptions options;
    compiler::SpmdProgram program;
    double compile_wall_s = 0;
  };
  static constexpr size_t kVariantProgramsKept = 3;
  std::deque<VariantProgram> variant_programs = {};
  // An HLO module run directly: partitioned or run as-is; as-is, the MFU
  // numerator is the matmul FLOPs the program executes.
  std::optional<compiler::ModuleMode> hlo_mode = std::nullopt;
  bool model_flops_executed = false;
};

CompiledWorkload compile_workload(const RunRequest& request);

// The hardware a workload runs on: its `hardware:` preset or file (a path
// relative to the workload file) with its `--set hardware.*` overrides.
hw::HardwareConfig workload_hardware(const workloads::Workload& workload);

// Simulates `compiled` on its hardware with `hardware_overrides` applied
// after the workload's own (keys without the "hardware." prefix); a variant
// that would change the program (another HBM capacity under remat: auto,
// another flops-per-byte ratio under the overlap test) is compiled for
// itself first (kept in compiled.variant_programs). UserError when an
// override is not a hardware key.
RunResult simulate_compiled(
    CompiledWorkload& compiled, const RunRequest& request,
    const std::vector<std::pair<std::string, std::string>>& hardware_overrides = {});

// The workload's `compiler:` section as partitioner options for `hardware`:
// the windowed-einsum overlap test weighs the device's peak against its ICI
// link rate.
compiler::SpmdOptions spmd_options(const workloads::CompilerSpec& spec,
                                   const hw::HardwareConfig& hardware);

// "fast" | "full"; UserError otherwise.
sim::Fidelity fidelity_from_name(const std::string& name);

}  // namespace podsim::driver
