// `podsim run` arguments -> driver::run_and_write / driver::serve_workload.
#include "cli/run_command.h"

#include <fmt/format.h>

#include <iostream>

#include "common/error.h"
#include "compiler/module_mode.h"
#include "driver/run_report.h"
#include "driver/run_workload.h"
#include "driver/serve.h"
#include "driver/trace_request.h"
#include "reports/formats.h"

namespace podsim::cli {

namespace {

// The workload, its --set overrides and the fidelity, as `run` and
// `run --serve` take them; the HLO-only flags refused for a workload YAML.
driver::RunRequest run_request(const RunOptions& o) {
  driver::RunRequest request;
  request.workload_path = o.input;
  request.overrides = o.sets;
  request.fidelity = driver::fidelity_from_name(o.fidelity);
  request.steady_state_loops = !o.every_iteration;
  request.symmetry = !o.no_symmetry;
  request.time_limit_s = o.time_limit;
  const bool hlo = driver::is_hlo_module_path(o.input);
  auto only_for_hlo = [&](bool given, const std::string& flag) {
    if (given && !hlo)
      throw UserError(SourceLocation{flag, 0, 0},
                      fmt::format("{} applies to an HLO module, not a workload YAML", flag),
                      "a workload sets these in its file: hardware:, mesh.axes, "
                      "model.global_batch; or --set them");
  };
  only_for_hlo(!o.hardware.empty(), "--hardware");
  only_for_hlo(!o.mesh.empty(), "--mesh");
  only_for_hlo(o.tokens > 0, "--tokens");
  only_for_hlo(o.slices != 1, "--slices");
  only_for_hlo(!o.mode.empty() && o.mode != "auto", "--mode");
  if (!o.hardware.empty()) request.hlo.hardware = o.hardware;
  request.hlo.mesh = o.mesh;
  request.hlo.tokens = o.tokens;
  request.hlo.slices = o.slices;
  request.hlo.mode = compiler::parse_module_mode(o.mode);
  return request;
}

int serve(const RunOptions& o) {
  if (o.format != "csv")
    throw UserError(SourceLocation{"--serve", 0, 0}, "--serve answers in CSV", "add --format csv");
  if (!o.trace.empty() || !o.output.empty() || !o.trace_devices.empty() ||
      !o.trace_window.empty() || !o.trace_limit.empty())
    throw UserError(SourceLocation{"--serve", 0, 0}, "--serve writes its reports to stdout",
                    "drop --trace (and its --trace-* flags) and --output");
  driver::serve_workload(run_request(o), o.timings, std::cin, std::cout);
  return 0;
}

}  // namespace

CLI::App* add_run_command(CLI::App& app, RunOptions& o) {
  CLI::App* run =
      app.add_subcommand("run", "simulate a workload and report utilization, memory and time");
  run->add_option("workload", o.input,
                  "workload YAML, or an XLA HLO text module (run without a workload)")
      ->required();
  run->add_option("--hardware", o.hardware,
                  "HLO module: hardware preset (podsim hardware list) or YAML (default tpuv3)");
  run->add_option("--mesh", o.mesh,
                  "HLO module: devices as a mesh, e.g. x=8 (default: the module's own count)");
  run->add_option("--slices", o.slices,
                  "HLO module: slices joined by the data-centre network the devices split into "
                  "(device id = slice x devices per slice + id in slice; default 1)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  run->add_option("--tokens", o.tokens, "HLO module: tokens per step, for tokens/s")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 50));
  run->add_option(
         "--mode", o.mode,
         "HLO module: auto | partition (a global program: propagate and partition) | as-is (one "
         "per-device program, simulated as written)")
      ->check(CLI::IsMember({"auto", "partition", "as-is"}));
  run->add_option("--set", o.sets, "override a key: --set model.layers=64");
  run->add_option("--format", o.format, "table|json|csv|markdown")
      ->check(CLI::IsMember({"table", "json", "csv", "markdown"}));
  run->add_option("--fidelity", o.fidelity, "fast|full")->check(CLI::IsMember({"fast", "full"}));
  run->add_option("--trace", o.trace, "write a Chrome/Perfetto trace JSON");
  run->add_option(
      "--trace-devices", o.trace_devices,
      "trace these devices: a list (0,5,17), sample:N (N evenly spread) or all (default; fast mode "
      "simulates device 0 alone)");
  run->add_option(
      "--trace-window", o.trace_window,
      "trace this part of the step, A:B in ms (e.g. 0:50); refused when it holds more than "
      "--trace-limit");
  run->add_option(
      "--trace-limit", o.trace_limit,
      "largest trace to write (default 20MB; 0 = none); without --trace-window the trace keeps the "
      "step's first part that fits");
  run->add_option("-o,--output", o.output, "write the report here instead of stdout");
  run->add_flag("--serve", o.serve,
                "compile once, then read lines of hardware.<key>=<value> overrides on stdin and "
                "print one CSV "
                "row per line (the header once, before the first row)");
  run->add_option("--time-limit", o.time_limit,
                  "stop and refuse, with the estimate, a simulation that would take longer than "
                  "this many seconds (judged from its progress after 2 %; 0 = no limit)")
      ->check(CLI::NonNegativeNumber);
  run->add_flag("--every-iteration", o.every_iteration,
                "simulate every iteration of long loops instead of counting the iterations after "
                "the machine's state repeats at the repeated time (the reference for that "
                "shortcut; slower)");
  run->add_flag("--no-symmetry", o.no_symmetry,
                "full fidelity: simulate every device instead of one per symmetry class (devices "
                "a translation of the torus maps onto each other alike; the reference for that "
                "shortcut; slower)");
  run->add_flag("--timings", o.timings,
                "json/csv: add compile_wall_s and simulate_wall_s (left out by default: same "
                "input, same bytes)");
  return run;
}

int run_run_command(const RunOptions& o) {
  if (o.serve) return serve(o);
  driver::RunOutputs outputs;
  outputs.format = reports::format_from_name(o.format);
  outputs.wall_times = o.timings;
  outputs.output = o.output;
  const driver::RunRequest request = run_request(o);
  outputs.trace =
      driver::parse_trace_flags({o.trace, o.trace_devices, o.trace_window, o.trace_limit});
  driver::run_and_write(request, outputs);
  return 0;
}

}  // namespace podsim::cli
