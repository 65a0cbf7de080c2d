// podsim subcommands. Options follow docs/design.md's command-line contract
// (plus `calibrate`); each command is a thin call into its layer.
#include "cli/commands.h"
#include "cli/sweep_commands.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <iostream>
#include <sstream>

#include "common/error.h"
#include "compiler/hlo/hlo_parser.h"
#include "compiler/hlo/hlo_printer.h"
#include "compiler/ir/verifier.h"
#include "compiler/backend/cleanup.h"
#include "compiler/module_mode.h"
#include "compiler/propagation/propagation.h"
#include "compiler/spmd/partitioner.h"
#include "compiler/spmd/verify.h"
#include "hw_models/config.h"
#include "hw_models/describe.h"
#include "reports/formats.h"
#include "common/files.h"
#include "common/progress.h"
#include "driver/run_workload.h"
#include "reports/trace.h"
#include "workloads/model_builder.h"
#include "workloads/workload.h"

namespace podsim::cli {

namespace {

// "--mesh x=4,y=2" -> device count (the product); the axis names only serve
// readability until the partitioner takes a named mesh.
int64_t mesh_device_count(const std::string& mesh) {
  int64_t devices = 1;
  for (const auto& [name, size] : driver::parse_mesh_flag(mesh)) devices *= size;
  return devices;
}

// What `partition` works on: an HLO file as written, partitioned with the
// default options, or a workload's forward model (built by
// workloads::build_model with its YAML shardings on the named tensors; the
// training step is `podsim run`'s business) with its `compiler:` section
// for its hardware.
struct PartitionInput {
  compiler::Module module;
  compiler::SpmdOptions options;
};

PartitionInput partition_input(const Options& o) {
  if (o.input.ends_with(".yaml") || o.input.ends_with(".yml")) {
    if (!o.mesh.empty())
      throw UserError(SourceLocation{"--mesh " + o.mesh, 0, 0}, "a workload brings its own mesh",
                      "change it with --set mesh.axes.x=... instead of --mesh");
    workloads::Workload workload = workloads::load_workload(o.input, o.sets);
    workloads::BuiltModel built = workloads::build_model(workload);
    built.module.set_num_partitions(built.mesh.num_devices());
    return {std::move(built.module), driver::spmd_options(workload.compiler, driver::workload_hardware(workload))};
  }
  if (!o.sets.empty())
    throw UserError(SourceLocation{"--set " + o.sets.front(), 0, 0}, "--set applies to workload YAML files",
                    "an HLO module carries its own shardings; use --mesh to set the device count");
  return {compiler::parse_hlo_file(o.input), compiler::SpmdOptions{}};
}

int partition(const Options& o) {
  const double verify_limit =
      o.verify_limit.empty() ? compiler::kDefaultVerifyLimitBytes : compiler::parse_byte_size(o.verify_limit);
  auto [module, options] = partition_input(o);
  const bool from_hlo = driver::is_hlo_module_path(o.input);
  if (from_hlo) {
    // A module XLA already partitioned must not be partitioned again.
    const std::optional<compiler::ModuleMode> forced = compiler::parse_module_mode(o.mode);
    if (forced == compiler::ModuleMode::kAsIs)
      throw UserError(SourceLocation{"--mode as-is", 0, 0}, "partition has nothing to do for an as-is module",
                      "run it: podsim run " + o.input + " --mode as-is");
    const compiler::ModeEvidence evidence = compiler::collect_mode_evidence(module);
    if (!forced && !evidence.per_device.empty())
      throw UserError(evidence.per_device.front().where.known() ? evidence.per_device.front().where
                                                                 : SourceLocation{o.input, 1, 1},
                      fmt::format("the module is already one per-device program: {}", evidence.per_device.front().what),
                      fmt::format("simulate it as it is with 'podsim run {}'; pass --mode partition to partition it "
                                  "anyway",
                                  o.input));
    if (o.mesh.empty() && module.num_partitions() <= 1) module.set_num_partitions(compiler::infer_device_count(module));
  }
  if (!o.mesh.empty()) {
    int64_t devices = mesh_device_count(o.mesh);
    if (module.num_partitions() > 1 && module.num_partitions() != devices)
      throw UserError(SourceLocation{o.input, 1, 1},
                      fmt::format("the module says num_partitions={} but --mesh {} has {} devices",
                                  module.num_partitions(), o.mesh, devices),
                      "drop --mesh or make its product match");
    if (o.propagate_only && from_hlo) {
      // Propagation reads device ids as labels (as XLA's pass does, which
      // takes no device count): shardings over ids beyond the mesh still
      // propagate; only partitioning needs every id to exist.
      const int64_t named = compiler::infer_device_count(module);
      if (named > devices) {
        fmt::print(stderr,
                   "podsim: note: shardings name device ids up to {} but --mesh {} has {} devices; propagating with "
                   "{} (partitioning would refuse)\n",
                   named - 1, o.mesh, devices, named);
        devices = named;
      }
    }
    module.set_num_partitions(devices);
  }
  compiler::verify_module(module);
  compiler::remove_stop_gradients(module);  // as compile() does: no gradient is taken here
  compiler::PropagationOptions propagation;
  propagation.propagate_to_parameters = !o.no_propagate_to_parameters;
  propagation.propagate_to_output = !o.no_propagate_to_output;
  compiler::propagate_shardings(module, propagation);
  if (o.propagate_only) {
    podsim::write_file_atomically(o.output, compiler::print_hlo(module));
    return 0;
  }
  compiler::SpmdResult result = compiler::partition_spmd_with_stats(module, options);
  if (o.verify) {
    // Over the interpreter's limits at full shapes, the same module is
    // checked at reduced shapes (compiler/spmd/verify_shrink.h), and says so.
    const compiler::VerifyPlan plan =
        compiler::plan_verify(module, result.module, options, verify_limit, o.verify_full_only);
    const compiler::Module& annotated = plan.reduced ? plan.reduced->annotated : module;
    const compiler::Module& program = plan.reduced ? plan.reduced->partitioned : result.module;
    const compiler::VerifyTolerance tolerance = compiler::verify_tolerance(annotated, program);
    compiler::VerifyOptions verify_options;
    verify_options.tolerance = tolerance.tolerance;
    verify_options.scale = tolerance.scale;
    compiler::VerifyResult v = compiler::verify_partitioning(annotated, program, verify_options);
    const std::string at = plan.reduced_text();
    if (plan.reduced && !plan.reduced->structure_difference.empty())
      fmt::print(stderr,
                 "verify: note: at reduced shapes the partitioned program has other opcode counts than at full "
                 "shapes ({})\n",
                 plan.reduced->structure_difference);
    if (!v.ok) {
      fmt::print(stderr, "verify: MISMATCH{} ({} devices): {}\n", at, v.devices, v.first_mismatch);
      return 1;
    }
    const std::string scale = tolerance.scale == compiler::CompareScale::kLeafRms
                                  ? fmt::format(" of the RMS, for sums of {} at u = 2^{}", tolerance.longest_sum,
                                                std::ilogb(tolerance.unit_roundoff))
                                  : "";
    fmt::print(stderr, "verify: ok{} ({} devices, max abs error {:g}, relative tolerance {:g}{}; estimated {}, {:.3g} element-ops)\n",
               at, v.devices, v.max_abs_error, tolerance.tolerance, scale,
               compiler::bytes_text(plan.estimate.peak_bytes), plan.estimate.element_ops);
  }
  podsim::write_file_atomically(o.output, compiler::print_hlo(result.module));
  return 0;
}

// The workload, its --set overrides and the fidelity, as `run` and
// `run --serve` take them.
driver::RunRequest run_request(const Options& o) {
  driver::RunRequest request;
  request.workload_path = o.input;
  request.overrides = o.sets;
  request.fidelity = driver::fidelity_from_name(o.fidelity);
  const bool hlo = driver::is_hlo_module_path(o.input);
  auto only_for_hlo = [&](bool given, const std::string& flag) {
    if (given && !hlo)
      throw UserError(SourceLocation{flag, 0, 0}, fmt::format("{} applies to an HLO module, not a workload YAML", flag),
                      "a workload sets these in its file: hardware:, mesh.axes, model.global_batch; or --set them");
  };
  only_for_hlo(!o.hardware.empty(), "--hardware");
  only_for_hlo(!o.mesh.empty(), "--mesh");
  only_for_hlo(o.tokens > 0, "--tokens");
  only_for_hlo(!o.mode.empty() && o.mode != "auto", "--mode");
  if (!o.hardware.empty()) request.hlo.hardware = o.hardware;
  request.hlo.mesh = o.mesh;
  request.hlo.tokens = o.tokens;
  request.hlo.mode = compiler::parse_module_mode(o.mode);
  return request;
}

// --trace-devices: "all", "sample:N" or a list "0,5,17".
void parse_trace_devices(const std::string& text, sim::TraceSelection& selection) {
  const SourceLocation where{"--trace-devices " + text, 0, 0};
  const char* hint = "write a list of device numbers (0,5,17), sample:N (N devices evenly spread) or all";
  auto integer = [&](const std::string& word) {
    size_t used = 0;
    int64_t value = -1;
    try {
      value = std::stoll(word, &used);
    } catch (...) {
      used = 0;
    }
    if (used == 0 || used != word.size() || value < 0)
      throw UserError(where, fmt::format("'{}' is not a device number", word), hint);
    return value;
  };
  if (text.empty() || text == "all") return;
  if (text.starts_with("sample:")) {
    selection.sample = integer(text.substr(7));
    if (selection.sample == 0) throw UserError(where, "sample:0 traces no device", hint);
    return;
  }
  std::istringstream words(text);
  for (std::string word; std::getline(words, word, ',');) selection.devices.push_back(integer(word));
  if (selection.devices.empty()) throw UserError(where, "no device given", hint);
}

// --trace-window: "A:B" milliseconds of the step; either side may be empty.
void parse_trace_window(const std::string& text, sim::TraceSelection& selection) {
  if (text.empty()) return;
  const SourceLocation where{"--trace-window " + text, 0, 0};
  const char* hint = "write the window as A:B milliseconds of the step, e.g. 0:50 (A: or :B leave a side open)";
  const size_t colon = text.find(':');
  if (colon == std::string::npos) throw UserError(where, "the window has no ':'", hint);
  auto ms = [&](const std::string& word, double open) {
    if (word.empty()) return open;
    size_t used = 0;
    double value = -1;
    try {
      value = std::stod(word, &used);
    } catch (...) {
      used = 0;
    }
    if (used == 0 || used != word.size() || !(value >= 0) || !std::isfinite(value))
      throw UserError(where, fmt::format("'{}' is not a time in milliseconds", word), hint);
    return value * 1e-3;
  };
  selection.window_begin_s = ms(text.substr(0, colon), 0);
  selection.window_end_s = ms(text.substr(colon + 1), std::numeric_limits<double>::infinity());
  if (!(selection.window_end_s > selection.window_begin_s))
    throw UserError(where, "the window ends before it begins", hint);
  selection.window_given = true;
}

// The trace part of a run request: devices, window, and the limit as a
// number of recorded items (reports/trace.h's bytes per item). Returns the
// limit in bytes (0: none).
double trace_request(const Options& o, driver::RunRequest& request) {
  request.record_trace = !o.trace.empty();
  auto only_with_trace = [&](const std::string& value, const char* flag) {
    if (!value.empty() && o.trace.empty())
      throw UserError(SourceLocation{flag, 0, 0}, fmt::format("{} selects what --trace writes", flag),
                      "add --trace FILE.json");
  };
  only_with_trace(o.trace_devices, "--trace-devices");
  only_with_trace(o.trace_window, "--trace-window");
  only_with_trace(o.trace_limit, "--trace-limit");
  if (!request.record_trace) return 0;
  parse_trace_devices(o.trace_devices, request.trace);
  parse_trace_window(o.trace_window, request.trace);
  double limit = reports::kDefaultTraceLimitBytes;
  if (o.trace_limit == "0" || o.trace_limit == "none") limit = 0;
  else if (!o.trace_limit.empty()) limit = compiler::parse_byte_size(o.trace_limit, "--trace-limit");
  request.trace.max_events =
      limit > 0 ? std::max<int64_t>(1, static_cast<int64_t>(limit / reports::kTraceBytesPerItem)) : 0;
  request.trace.bytes_per_item = reports::kTraceBytesPerItem;
  return limit;
}

std::string megabytes(double bytes) { return fmt::format("{:.3g} MB", bytes / 1e6); }

// podsim run: the whole pipeline (driver/run_workload.h), then the report
// and the optional trace, each written whole or not at all. A trace window
// holding more than the limit is refused before anything is written; without
// a window the trace keeps the step's first part that fits (noted on stderr).
int run_workload(const Options& o) {
  reports::Format format = reports::format_from_name(o.format);
  driver::RunRequest request = run_request(o);
  const double trace_limit = trace_request(o, request);
  // Progress with ETA: on a terminal redrawn in place after 1 s; a full
  // fidelity run into a log (minutes on a pod) prints a line per 10% once it
  // has run 10 s, so short runs and fast sweep children stay silent.
  const bool tty = isatty(fileno(stderr)) != 0;
  const bool full = request.fidelity == sim::Fidelity::kFull;
  podsim::ProgressLine progress(stderr, tty ? 1.0 : 10.0,
                                 tty ? podsim::ProgressStyle::kInPlace : podsim::ProgressStyle::kLines);
  if (tty || full)
    request.progress = [&progress](const std::string& stage, double fraction) { progress.update(stage, fraction); };
  driver::RunResult result = driver::run_workload(request);
  progress.finish();
  reports::FormatOptions format_options;
  format_options.wall_times = o.timings;
  // Table and markdown reports carry the wall-time line; json/csv keep their
  // bytes deterministic, so a full run says it on stderr.
  if (full && (format == reports::Format::kJson || format == reports::Format::kCsv) && !o.timings)
    fmt::print(stderr, "podsim: wall time: compile {:.2f} s, simulate {:.2f} s\n", result.report.compile_wall_s,
               result.report.simulate_wall_s);
  std::string text = reports::format_report(result.report, format, format_options);
  if (!o.trace.empty()) {
    const sim::Timeline& t = result.timeline;
    if (t.trace_over_limit) {
      const double estimate = static_cast<double>(t.trace_events_seen) * reports::kTraceBytesPerItem;
      throw UserError(SourceLocation{"--trace " + o.trace, 0, 0},
                      fmt::format("the trace would hold {} events (about {}) in its window on {} device(s), over "
                                  "the {} limit; nothing was written",
                                  t.trace_events_seen, megabytes(estimate), t.traced_devices.size(),
                                  megabytes(static_cast<double>(t.trace_selection.max_events) *
                                            reports::kTraceBytesPerItem)),
                      "narrow --trace-window (ms of the step), trace fewer devices with --trace-devices "
                      "(a list or sample:N), or raise --trace-limit (e.g. 200MB; 0 = none)");
    }
    const int64_t bytes = reports::write_trace_file(o.trace, t, result.report.workload, trace_limit);
    if (t.trace_cut_s >= 0)
      fmt::print(stderr,
                 "trace: {} holds the step's first {:.6g} ms of {:.6g} ms ({}, the --trace-limit); choose the part "
                 "with --trace-window A:B (ms), fewer devices with --trace-devices, or raise --trace-limit\n",
                 o.trace, t.trace_cut_s * 1e3, t.step_time_s * 1e3, megabytes(static_cast<double>(bytes)));
  }
  podsim::write_file_atomically(o.output, text);
  return 0;
}

// podsim run --serve: compile once (again for a variant that changes the
// program: another HBM capacity under remat: auto, another peak or link
// rate under the windowed-einsum overlap test), then one report per stdin line. A line
// holds hardware overrides ("hardware.core.op_overhead_s=2e-6 ...", blank =
// the workload's own hardware); the answer is the report's CSV data line,
// preceded by the header line on the first answer and whenever the columns
// change (so a stream of answers reads as one CSV table), or one line
// "error: <message>" when the variant is rejected, then a flush. The
// protocol behind `podsim calibrate --fit` (studies/calibration_fit.h), and
// a fast way to script hardware what-ifs of a big workload.
int serve_workload(const Options& o) {
  if (o.format != "csv")
    throw UserError(SourceLocation{"--serve", 0, 0}, "--serve answers in CSV", "add --format csv");
  if (!o.trace.empty() || !o.output.empty() || !o.trace_devices.empty() || !o.trace_window.empty() ||
      !o.trace_limit.empty())
    throw UserError(SourceLocation{"--serve", 0, 0}, "--serve writes its reports to stdout",
                    "drop --trace (and its --trace-* flags) and --output");
  const driver::RunRequest request = run_request(o);
  driver::CompiledWorkload compiled = driver::compile_workload(request);
  reports::FormatOptions format_options;
  format_options.wall_times = o.timings;
  std::string last_header;
  for (std::string line; std::getline(std::cin, line);) {
    try {
      std::vector<std::pair<std::string, std::string>> overrides;
      std::istringstream words(line);
      for (std::string word; words >> word;) {
        const size_t eq = word.find('=');
        if (!word.starts_with("hardware.") || eq == std::string::npos)
          throw UserError(SourceLocation{word, 0, 0}, "a --serve line holds hardware.<key>=<value> words",
                          "e.g. hardware.core.op_overhead_s=2e-6 hardware.ici.link_efficiency=0.8");
        overrides.emplace_back(word.substr(9, eq - 9), word.substr(eq + 1));
      }
      driver::RunResult result = driver::simulate_compiled(compiled, request, overrides);
      const std::string csv = reports::format_report(result.report, reports::Format::kCsv, format_options);
      const size_t end_of_header = csv.find('\n') + 1;
      if (csv.compare(0, end_of_header, last_header) != 0) {
        last_header = csv.substr(0, end_of_header);
        fmt::print("{}", last_header);
      }
      fmt::print("{}", csv.substr(end_of_header));
    } catch (const UserError& e) {
      std::string message = e.what();
      for (char& c : message)
        if (c == '\n') c = ' ';
      fmt::print("error: {}\n", message);
    }
    std::fflush(stdout);
  }
  return 0;
}

// podsim hardware list: each shipped preset with the figures that tell
// them apart (per device: peak matmul rate and HBM; the pod's chips).
int hardware_list() {
  fmt::print("{:<10} {:>8} {:>14} {:>10} {:>8}  {}\n", "preset", "devices", "peak TFLOP/s", "HBM GiB", "chips", "torus");
  for (const std::string& name : hw::preset_names()) {
    const hw::HardwareConfig c = hw::load_hardware(name);
    int64_t chips = 1;
    for (int64_t d : c.ici.pod_dims) chips *= d;
    const std::string torus = fmt::format("{}", fmt::join(c.ici.pod_dims, "x"));
    fmt::print("{:<10} {:>8} {:>14.4g} {:>10.4g} {:>8}  {}\n", name, chips * c.chip.devices_per_chip,
               hw::peak_matmul_flops_per_device(c.core) / 1e12, c.hbm.capacity_bytes / (1024.0 * 1024 * 1024), chips,
               torus);
  }
  fmt::print("details: podsim hardware show <preset>\n");
  return 0;
}

int hardware_show(const Options& o) {
  fmt::print("{}", hw::describe_hardware(hw::load_hardware(o.preset)));
  return 0;
}

}  // namespace

Commands::Commands(CLI::App& app) {
  // -j: CLI11's PositiveNumber prints its upper bound as a 300-digit number;
  // a real range reads "Value 0 not in range 1 to 4096".
  const CLI::Range jobs_range(1, 4096);
  Options& o = options_;
  run_ = app.add_subcommand("run", "simulate a workload and report utilization, memory and time");
  run_->add_option("workload", o.input, "workload YAML, or an XLA HLO text module (run without a workload)")
      ->required();
  run_->add_option("--hardware", o.hardware, "HLO module: hardware preset (tpuv3, tpuv4) or YAML (default tpuv3)");
  run_->add_option("--mesh", o.mesh, "HLO module: devices as a mesh, e.g. x=8 (default: the module's own count)");
  run_->add_option("--tokens", o.tokens, "HLO module: tokens per step, for tokens/s")->check(CLI::Range(int64_t{0}, int64_t{1} << 50));
  run_->add_option("--mode", o.mode,
                   "HLO module: auto | partition (a global program: propagate and partition) | as-is (one "
                   "per-device program, simulated as written)")
      ->check(CLI::IsMember({"auto", "partition", "as-is"}));
  run_->add_option("--set", o.sets, "override a key: --set model.layers=64");
  run_->add_option("--format", o.format, "table|json|csv|markdown")
      ->check(CLI::IsMember({"table", "json", "csv", "markdown"}));
  run_->add_option("--fidelity", o.fidelity, "fast|full")->check(CLI::IsMember({"fast", "full"}));
  run_->add_option("--trace", o.trace, "write a Chrome/Perfetto trace JSON");
  run_->add_option("--trace-devices", o.trace_devices,
                   "trace these devices: a list (0,5,17), sample:N (N evenly spread) or all (default; fast mode "
                   "simulates device 0 alone)");
  run_->add_option("--trace-window", o.trace_window,
                   "trace this part of the step, A:B in ms (e.g. 0:50); refused when it holds more than "
                   "--trace-limit");
  run_->add_option("--trace-limit", o.trace_limit,
                   "largest trace to write (default 20MB; 0 = none); without --trace-window the trace keeps the "
                   "step's first part that fits");
  run_->add_option("-o,--output", o.output, "write the report here instead of stdout");
  run_->add_flag("--serve", o.serve,
                 "compile once, then read lines of hardware.<key>=<value> overrides on stdin and print one CSV "
                 "row per line (the header once, before the first row)");
  run_->add_flag("--timings", o.timings,
                 "json/csv: add compile_wall_s and simulate_wall_s (left out by default: same input, same bytes)");

  partition_ = app.add_subcommand("partition", "propagate shardings and partition into one SPMD program");
  partition_->add_option("input", o.input, "workload YAML or XLA HLO text module")->required();
  partition_->add_option("--set", o.sets, "override a key");
  partition_->add_option("--mesh", o.mesh, "logical mesh, e.g. x=4,y=2");
  partition_->add_option("-o,--output", o.output, "write the per-device program here");
  partition_->add_flag("--verify", o.verify, "check numeric equivalence with the reference interpreter");
  partition_->add_option("--verify-limit", o.verify_limit, "--verify's interpreter memory limit (default 2GiB)");
  partition_->add_flag("--verify-full-only", o.verify_full_only,
                       "--verify refuses a module over its limits instead of checking it at reduced shapes");
  partition_->add_flag("--propagate-only", o.propagate_only, "print the module with all shardings, unpartitioned");
  partition_->add_flag("--no-propagate-to-parameters", o.no_propagate_to_parameters,
                       "unannotated entry parameters stay replicated (XLA's allow_spmd_sharding_propagation_to_parameters=false)");
  partition_->add_flag("--no-propagate-to-output", o.no_propagate_to_output,
                       "an unannotated entry result stays replicated (XLA's allow_spmd_sharding_propagation_to_output=false)");
  partition_->add_option("--mode", o.mode, "auto (refuse a module XLA already partitioned) | partition (partition it anyway)")
      ->check(CLI::IsMember({"auto", "partition", "as-is"}));

  sweep_ = app.add_subcommand("sweep", "run a grid of workload variants (or: sweep merge A.csv B.csv ... -o out.csv)");
  sweep_->add_option("sweep", o.inputs, "SWEEP.yaml, or 'merge' and the shard CSV files")->required();
  sweep_->add_option("-j", o.jobs, "points run at once (child processes)")->check(jobs_range);
  sweep_->add_option("--shard", o.shard, "run slice I/N of the grid (e.g. $SLURM_ARRAY_TASK_ID/N)");
  sweep_->add_option("-o,--output", o.output, "results CSV (default stdout)");
  sweep_->add_option("--jsonl", o.jsonl, "also write one JSON object per point here");
  sweep_->add_option("--plot", o.plot, "plot file (svg|png), drawn with gnuplot; needs -o results.csv");
  sweep_->add_option("--plot-metric", o.plot_metrics,
                     "report field to plot, one panel each (repeatable; default step_time_s)");
  sweep_->add_option("--timeout", o.timeout_seconds, "kill a point running longer than S seconds (an error row)")
      ->check(CLI::Range(0.0, 1e9));

  regress_ = app.add_subcommand("regress", "compare workloads with tracked baselines");
  regress_->add_option("--baselines", o.baselines, "baseline folder (default: reports/baselines here, else in the source tree of this podsim)");
  regress_->add_flag("--update", o.update, "rewrite the baselines");
  regress_->add_option("-j", o.jobs, "workloads run at once")->check(jobs_range);
  regress_->add_flag("--all", o.all_rows, "print unchanged metrics too");

  calibrate_ = app.add_subcommand("calibrate", "predicted vs measured throughput of the calibration configs");
  calibrate_->add_option("--measured", o.measured, "measured numbers (default: measured.yaml in the baselines folder regress finds)");
  calibrate_->add_option("-o,--output", o.output, "markdown table (default stdout)");
  calibrate_->add_option("-j", o.jobs, "workloads run at once (--fit: every workload's server works at once)")
      ->check(jobs_range);
  calibrate_->add_flag("--fit", o.fit,
                       "fit the hardware parameters listed under 'fit:' (one set for all configs) and predict "
                       "each config from a fit to the others");
  calibrate_->add_option("--max-evaluations", o.max_evaluations, "--fit: parameter sets per search at most")
      ->check(CLI::Range(1, 100000));

  CLI::App* hardware = app.add_subcommand("hardware", "inspect hardware presets");
  hardware->require_subcommand(1);
  hardware_show_ = hardware->add_subcommand("show", "print a preset with derived figures");
  hardware_show_->add_option("preset", o.preset, "preset name (see: podsim hardware list) or YAML path")->required();
  hardware_list_ = hardware->add_subcommand("list", "list the shipped hardware presets");
}

int Commands::run() const {
  if (*partition_) return partition(options_);
  if (*run_) return options_.serve ? serve_workload(options_) : run_workload(options_);
  if (*sweep_) {
    const Options& o = options_;
    if (o.inputs.front() == "merge")
      return sweep_merge_command(std::vector<std::string>(o.inputs.begin() + 1, o.inputs.end()), o.output);
    if (o.inputs.size() != 1)
      throw UserError(fmt::format("'podsim sweep' takes one SWEEP.yaml, got {}", o.inputs.size()),
                      "to join shard results: podsim sweep merge A.csv B.csv -o out.csv");
    SweepCommandOptions sweep;
    sweep.sweep_file = o.inputs.front();
    sweep.jobs = o.jobs;
    sweep.shard = o.shard;
    sweep.output = o.output;
    sweep.jsonl = o.jsonl;
    sweep.plot = o.plot;
    sweep.plot_metrics = o.plot_metrics;
    sweep.timeout_seconds = o.timeout_seconds;
    return sweep_command(sweep);
  }
  if (*regress_) {
    RegressCommandOptions regress;
    regress.baselines_dir = options_.baselines;
    regress.update = options_.update;
    regress.jobs = options_.jobs;
    regress.all_rows = options_.all_rows;
    return regress_command(regress);
  }
  if (*calibrate_) {
    CalibrateCommandOptions calibrate;
    calibrate.measured_file = options_.measured;
    calibrate.output = options_.output;
    calibrate.jobs = options_.jobs;
    calibrate.fit = options_.fit;
    calibrate.max_evaluations = options_.max_evaluations;
    return calibrate_command(calibrate);
  }
  if (*hardware_show_) return hardware_show(options_);
  if (*hardware_list_) return hardware_list();
  return 0;
}

}  // namespace podsim::cli
