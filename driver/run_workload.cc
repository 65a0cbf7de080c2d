// run_workload: the `podsim run` pipeline (driver/run_workload.h). Maps the
// workload's `training:` and `mesh:` sections onto the compiler's and the
// hardware model's option structs, runs the stages and times them.
#include "driver/run_workload.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>

#include "common/error.h"
#include "compiler/compile.h"
#include "compiler/hlo/hlo_parser.h"
#include "compiler/ir/verifier.h"
#include "driver/lowering.h"
#include "hw_models/config.h"
#include "hw_models/system.h"
#include "sim/simulator.h"
#include "workloads/hlo_model.h"
#include "workloads/model_builder.h"

namespace podsim::driver {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Do two option sets give the same program? They differ only in what
// compile_options derives from the hardware: the HBM budget and the
// partitioner's options (spmd_options), compared whole so that a new
// hardware-derived option cannot be left out.
bool same_program_options(const compiler::CompileOptions& a, const compiler::CompileOptions& b) {
  return a.remat_auto == b.remat_auto && a.hbm_budget_bytes == b.hbm_budget_bytes &&
         a.spmd == b.spmd;
}

// A hardware path in a workload file is relative to that file; preset names
// and paths that exist as given are passed through.
std::string resolve_hardware(const workloads::Workload& w) {
  std::vector<std::string> presets = hw::preset_names();
  if (std::find(presets.begin(), presets.end(), w.hardware) != presets.end()) return w.hardware;
  std::filesystem::path given(w.hardware);
  if (given.is_absolute() || std::filesystem::exists(given)) return w.hardware;
  std::filesystem::path beside = std::filesystem::path(w.source_file).parent_path() / given;
  return std::filesystem::exists(beside) ? beside.string() : w.hardware;
}

// The workload's mesh laid onto the hardware; a placement error without a
// position of its own (the mesh does not fit the pod, the slice is not a
// box, ...) points at mesh.physical, or mesh.axes when the slice is chosen
// by default.
// On the heap: a System is not moved (its Boost chip graph would be copied).
std::unique_ptr<hw::System> place_mesh(const hw::HardwareConfig& hardware,
                                       const workloads::Workload& w) {
  try {
    return std::make_unique<hw::System>(hardware, mesh_layout(w.mesh));
  } catch (const UserError& e) {
    if (!e.location().file.empty()) throw;
    const bool physical = !w.mesh.physical_location.file.empty();
    throw UserError(physical ? w.mesh.physical_location : w.mesh.axes_location, e.message(),
                    e.hint());
  }
}

// Calls the request's progress callback, when it has one.
void report_progress(const RunRequest& request, const char* stage, double fraction) {
  if (request.progress) request.progress(stage, fraction);
}

}  // namespace

bool is_hlo_module_path(const std::string& path) {
  return !path.ends_with(".yaml") && !path.ends_with(".yml");
}

std::vector<std::pair<std::string, int64_t>> parse_mesh_flag(const std::string& mesh) {
  std::vector<std::pair<std::string, int64_t>> axes;
  size_t pos = 0;
  while (pos <= mesh.size()) {
    const size_t comma = mesh.find(',', pos);
    const std::string item =
        mesh.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    const size_t eq = item.find('=');
    int64_t size = 0;
    try {
      size_t used = 0;
      size = eq == std::string::npos ? 0 : std::stoll(item.substr(eq + 1), &used);
      if (eq != std::string::npos && used != item.size() - eq - 1) size = 0;
    } catch (...) {
      size = 0;
    }
    if (eq == std::string::npos || eq == 0 || size < 1)
      throw UserError(SourceLocation{"--mesh " + mesh, 0, 0},
                      fmt::format("bad mesh axis '{}'", item),
                      "write the mesh as name=size pairs, e.g. --mesh x=4,y=2");
    axes.emplace_back(item.substr(0, eq), size);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return axes;
}

namespace {

// `podsim run MODULE.hlo`: the module's device count (or --mesh), its mode
// (module_mode.h, or --mode), a workload made in code around it (no
// training step: the module is the step), compiled by partitioning it or
// taken as the per-device program it is.
CompiledWorkload compile_hlo_module(const RunRequest& request) {
  const HloRunOptions& o = request.hlo;
  report_progress(request, "loading", 0);
  compiler::Module module = compiler::parse_hlo_file(request.workload_path);
  compiler::verify_module(module);
  const compiler::ModuleMode mode = o.mode ? *o.mode : compiler::decide_module_mode(module);

  workloads::Workload w;
  w.name = std::filesystem::path(request.workload_path).stem().string();
  w.source_file = request.workload_path;
  w.hardware = o.hardware;
  for (const std::string& set : request.overrides) {
    const size_t eq = set.find('=');
    if (!set.starts_with("hardware.") || eq == std::string::npos)
      throw UserError(SourceLocation{"--set " + set, 0, 0},
                      "--set on an HLO module takes hardware keys only",
                      "e.g. --set hardware.ici.link_bandwidth=2e11; the device count is --mesh, "
                      "the hardware --hardware");
    w.hardware_overrides.emplace_back(set.substr(9, eq - 9), set.substr(eq + 1));
  }
  if (!o.mesh.empty()) {
    w.mesh.axes = parse_mesh_flag(o.mesh);
    const int64_t devices = w.mesh.device_count();
    if (module.num_partitions() > 1 && module.num_partitions() != devices)
      throw UserError(SourceLocation{request.workload_path, 1, 1},
                      fmt::format("the module says num_partitions={} but --mesh {} has {} devices",
                                  module.num_partitions(), o.mesh, devices),
                      "drop --mesh or make its product match");
  } else {
    w.mesh.axes = {{"x", compiler::infer_device_count(module)}};
  }
  if (o.slices > 1) {
    // The devices split into slices: the last mesh axis holds the slices (major, as a hybrid
    // mesh lays them out), the rest of it stays in each slice.
    auto& axes = w.mesh.axes;
    const int64_t devices = w.mesh.device_count();
    if (devices % o.slices != 0 || axes.front().second % o.slices != 0)
      throw UserError(
          SourceLocation{"--slices", 0, 0},
          fmt::format("{} devices do not split into {} whole slices{}", devices, o.slices,
                      devices % o.slices == 0 ? fmt::format(" along the first mesh axis ({} = {})",
                                                            axes.front().first, axes.front().second)
                                              : ""),
          "give a slice count that divides the device count (and the first --mesh "
          "axis)");
    axes.front().second /= o.slices;
    w.mesh.dcn = {{"slices", o.slices}};
  }
  w.model.kind = workloads::ModelKind::kHlo;
  w.model.file = request.workload_path;
  w.model.global_batch = o.tokens;
  w.model.seq_len = 1;
  w.training.enabled = false;
  std::unique_ptr<hw::System> system = place_mesh(workload_hardware(w), w);
  const int64_t devices = w.mesh.device_count();

  std::vector<compiler::MeshAxis> axes;
  for (const auto& [name, size] : w.mesh.logical_axes()) axes.push_back({name, size});
  workloads::BuiltModel model{compiler::Module{}, compiler::DeviceMesh(axes), {}};
  report_progress(request, "compiling", 0);
  Clock::time_point compile_start = Clock::now();
  compiler::SpmdProgram program;
  if (mode == compiler::ModuleMode::kAsIs) {
    model.info.parameters = workloads::per_device_module_parameters(module);
    model.info.activated_parameters = model.info.parameters;
    model.info.tokens_per_step = o.tokens;
    program = compiler::compile_as_is(module, devices);
  } else {
    module.set_num_partitions(devices);
    model.info = workloads::hlo_model_info(module, /*training=*/false, o.tokens);
    program = compiler::compile(module, compile_options(w, model, system->config()));
  }
  const double compile_wall_s = seconds_since(compile_start);
  model.module = std::move(module);
  CompiledWorkload compiled{std::move(w), std::move(system), std::move(model), std::move(program),
                            compile_wall_s};
  compiled.hlo_mode = mode;
  compiled.model_flops_executed = mode == compiler::ModuleMode::kAsIs;
  return compiled;
}

// A scanned stack's body is recomputed in the backward loop whatever the
// remat choice (docs/loops.md): say so beside what applied elsewhere.
void note_scan_body_remat(const workloads::Workload& w, compiler::SpmdProgram& program) {
  if (w.model.layer_loop == workloads::LayerLoop::kScan && w.training.enabled)
    program.stats.remat_applied = "full (scan body); elsewhere " + program.stats.remat_applied;
}

}  // namespace

hw::HardwareConfig workload_hardware(const workloads::Workload& workload) {
  return hw::load_hardware(resolve_hardware(workload), workload.hardware_overrides);
}

CompiledWorkload compile_workload(const RunRequest& request) {
  if (is_hlo_module_path(request.workload_path)) return compile_hlo_module(request);
  report_progress(request, "loading", 0);
  workloads::Workload w = workloads::load_workload(request.workload_path, request.overrides);
  std::unique_ptr<hw::System> system =
      place_mesh(workload_hardware(w), w);  // placement errors before the compile
  workloads::BuiltModel model = workloads::build_model(w);

  report_progress(request, "compiling", 0);
  Clock::time_point compile_start = Clock::now();
  compiler::SpmdProgram program =
      compiler::compile(model.module, compile_options(w, model, system->config()));
  note_scan_body_remat(w, program);
  const double compile_wall_s = seconds_since(compile_start);
  return CompiledWorkload{std::move(w), std::move(system), std::move(model), std::move(program),
                          compile_wall_s};
}

RunResult simulate_compiled(
    CompiledWorkload& compiled, const RunRequest& request,
    const std::vector<std::pair<std::string, std::string>>& hardware_overrides) {
  auto progress = [&](const char* stage, double fraction) {
    report_progress(request, stage, fraction);
  };
  const workloads::Workload& w = compiled.workload;
  std::unique_ptr<hw::System> variant;
  // The program depends on the hardware through the compile options alone
  // (remat auto's HBM budget, the windowed-einsum overlap test): a variant
  // that changes them runs a program compiled for it.
  const compiler::SpmdProgram* program = &compiled.program;
  double compile_wall_s = compiled.compile_wall_s;
  if (!hardware_overrides.empty()) {
    hw::HardwareConfig config = compiled.system->config();
    hw::apply_overrides(config, hardware_overrides);
    variant = place_mesh(config, w);
    const compiler::CompileOptions options = compile_options(w, compiled.model, config);
    // A module run as it is has no compile options: it is the program.
    const bool as_is = compiled.hlo_mode == compiler::ModuleMode::kAsIs;
    if (!as_is && !same_program_options(
                      options, compile_options(w, compiled.model, compiled.system->config()))) {
      auto& kept = compiled.variant_programs;
      auto hit =
          std::find_if(kept.begin(), kept.end(), [&](const CompiledWorkload::VariantProgram& v) {
            return same_program_options(v.options, options);
          });
      if (hit == kept.end()) {
        progress("compiling", 0);
        Clock::time_point compile_start = Clock::now();
        compiler::SpmdProgram recompiled = compiler::compile(compiled.model.module, options);
        note_scan_body_remat(w, recompiled);
        kept.push_front({options, std::move(recompiled), seconds_since(compile_start)});
        if (kept.size() > CompiledWorkload::kVariantProgramsKept) kept.pop_back();
      } else if (hit != kept.begin()) {
        std::rotate(kept.begin(), hit, hit + 1);  // most recent first
      }
      program = &kept.front().program;
      compile_wall_s = kept.front().compile_wall_s;
    }
  }
  const hw::System& system = variant ? *variant : *compiled.system;
  const hw::HardwareConfig& hardware = system.config();
  progress("simulating", 0);
  sim::SimOptions sim_options;
  sim_options.fidelity = request.fidelity;
  sim_options.steady_state_loops = request.steady_state_loops;
  sim_options.symmetry = request.symmetry;
  sim_options.time_limit_s = request.time_limit_s;
  sim_options.record_trace = request.record_trace;
  sim_options.trace = request.trace;
  if (request.progress)
    sim_options.progress = [&](double fraction) { progress("simulating", fraction); };
  Clock::time_point simulate_start = Clock::now();
  RunResult result;
  result.workload = w;
  result.timeline = sim::simulate(*program, system, sim_options);
  double simulate_wall_s = seconds_since(simulate_start);

  progress("reporting", 0);
  reports::SummaryInput input;
  input.timeline = &result.timeline;
  input.program = program;
  input.model = compiled.model.info;
  input.annotated = &compiled.model.module;
  if (compiled.model_flops_executed)
    input.model.model_flops_per_step = result.timeline.executed_matmul_flops_per_device *
                                       static_cast<double>(result.timeline.devices);
  if (compiled.hlo_mode) input.mode = compiler::module_mode_name(*compiled.hlo_mode);
  input.workload_name = w.name;
  input.hardware_name = hardware.name;
  input.peak_flops_per_device = hw::peak_matmul_flops_per_device(hardware.core);
  input.hbm_capacity_bytes = hardware.hbm.capacity_bytes;
  input.compile_wall_s = compile_wall_s;
  input.simulate_wall_s = simulate_wall_s;
  input.top_n = request.top_n;
  result.report = reports::summarize(input);
  std::vector<std::string> axis_names;
  for (const auto& axis : w.mesh.axes) axis_names.push_back(axis.first);
  for (std::string& note :
       hw::placement_notes(system.topology(), system.placement(), axis_names,
                           workloads::name_of(w.mesh.order), hardware.ici.pod_dims))
    result.report.notes.push_back(std::move(note));
  progress("reporting", 1);
  return result;
}

RunResult run_workload(const RunRequest& request) {
  CompiledWorkload compiled = compile_workload(request);
  return simulate_compiled(compiled, request);
}

}  // namespace podsim::driver
