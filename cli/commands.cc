// podsim subcommands. Options follow DESIGN.md's command-line contract;
// commands whose layer does not exist yet say so and exit 2.
#include "cli/commands.h"

#include <fmt/format.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "common/error.h"
#include "compiler/hlo/hlo_parser.h"
#include "compiler/hlo/hlo_printer.h"
#include "compiler/ir/verifier.h"
#include "compiler/propagation/propagation.h"
#include "compiler/spmd/partitioner.h"
#include "compiler/spmd/verify.h"
#include "hw_models/config.h"
#include "hw_models/describe.h"
#include "reports/formats.h"
#include "reports/output_file.h"
#include "reports/progress.h"
#include "reports/run_workload.h"
#include "reports/trace.h"

namespace podsim::cli {

namespace {

[[noreturn]] void not_implemented(const std::string& command) {
  throw UserError(fmt::format("'podsim {}' is not implemented yet", command),
                  "available now: 'podsim partition FILE.hlo [--propagate-only] [--verify]' and 'podsim hardware show PRESET'");
}

// Writes to a temporary file, then renames it: no partial output on failure.
void write_output(const std::string& path, const std::string& text) {
  if (path.empty() || path == "-") {
    fmt::print("{}", text);
    return;
  }
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) throw UserError(SourceLocation{path, 0, 0}, "cannot open the output file for writing");
    out << text;
    if (!out) throw UserError(SourceLocation{path, 0, 0}, "writing the output file failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw UserError(SourceLocation{path, 0, 0}, "cannot move the output file into place");
}

// "--mesh x=4,y=2" -> device count (the product); the axis names only serve
// readability until the partitioner takes a named mesh.
int64_t mesh_device_count(const std::string& mesh) {
  int64_t devices = 1;
  size_t pos = 0;
  while (pos < mesh.size()) {
    size_t comma = mesh.find(',', pos);
    std::string item = mesh.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    size_t eq = item.find('=');
    int64_t size = 0;
    try {
      size = eq == std::string::npos ? 0 : std::stoll(item.substr(eq + 1));
    } catch (...) {
      size = 0;
    }
    if (eq == std::string::npos || eq == 0 || size < 1)
      throw UserError(SourceLocation{"--mesh " + mesh, 0, 0}, fmt::format("bad mesh axis '{}'", item),
                      "write the mesh as name=size pairs, e.g. --mesh x=4,y=2");
    devices *= size;
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return devices;
}

int partition(const Options& o) {
  if (o.input.ends_with(".yaml") || o.input.ends_with(".yml")) not_implemented("partition WORKLOAD.yaml (model builders)");
  compiler::Module module = compiler::parse_hlo_file(o.input);
  if (!o.mesh.empty()) {
    int64_t devices = mesh_device_count(o.mesh);
    if (module.num_partitions() > 1 && module.num_partitions() != devices)
      throw UserError(SourceLocation{o.input, 1, 1},
                      fmt::format("the module says num_partitions={} but --mesh {} has {} devices",
                                  module.num_partitions(), o.mesh, devices),
                      "drop --mesh or make its product match");
    module.set_num_partitions(devices);
  }
  compiler::verify_module(module);
  compiler::propagate_shardings(module);
  if (o.propagate_only) {
    write_output(o.output, compiler::print_hlo(module));
    return 0;
  }
  compiler::SpmdResult result = compiler::partition_spmd_with_stats(module, compiler::SpmdOptions{});
  if (o.verify) {
    compiler::VerifyResult v = compiler::verify_partitioning(module, result.module);
    if (!v.ok) {
      fmt::print(stderr, "verify: MISMATCH ({} devices): {}\n", v.devices, v.first_mismatch);
      return 1;
    }
    fmt::print(stderr, "verify: ok ({} devices, max abs error {:g})\n", v.devices, v.max_abs_error);
  }
  write_output(o.output, compiler::print_hlo(result.module));
  return 0;
}

// podsim run: the whole pipeline (reports/run_workload.h), then the report
// and the optional trace, each written whole or not at all.
int run_workload(const Options& o) {
  reports::Format format = reports::format_from_name(o.format);
  reports::RunRequest request;
  request.workload_path = o.input;
  request.overrides = o.sets;
  request.fidelity = reports::fidelity_from_name(o.fidelity);
  request.record_trace = !o.trace.empty();
  reports::ProgressLine progress(stderr);
  if (isatty(fileno(stderr)))
    request.progress = [&progress](const std::string& stage, double fraction) { progress.update(stage, fraction); };
  reports::RunResult result = reports::run_workload(request);
  progress.finish();
  std::string text = reports::format_report(result.report, format);
  if (!o.trace.empty())
    reports::write_file_atomically(o.trace, reports::trace_json(result.timeline, result.report.workload));
  reports::write_file_atomically(o.output, text);
  return 0;
}

int hardware_show(const Options& o) {
  fmt::print("{}", hw::describe_hardware(hw::load_hardware(o.preset)));
  return 0;
}

}  // namespace

Commands::Commands(CLI::App& app) {
  Options& o = options_;
  run_ = app.add_subcommand("run", "simulate a workload and report utilization, memory and time");
  run_->add_option("workload", o.input, "workload YAML")->required();
  run_->add_option("--set", o.sets, "override a key: --set model.layers=64");
  run_->add_option("--format", o.format, "table|json|csv|markdown")
      ->check(CLI::IsMember({"table", "json", "csv", "markdown"}));
  run_->add_option("--fidelity", o.fidelity, "fast|full")->check(CLI::IsMember({"fast", "full"}));
  run_->add_option("--trace", o.trace, "write a Chrome/Perfetto trace JSON");
  run_->add_option("-o,--output", o.output, "write the report here instead of stdout");

  partition_ = app.add_subcommand("partition", "propagate shardings and partition into one SPMD program");
  partition_->add_option("input", o.input, "workload YAML or XLA HLO text module")->required();
  partition_->add_option("--set", o.sets, "override a key");
  partition_->add_option("--mesh", o.mesh, "logical mesh, e.g. x=4,y=2");
  partition_->add_option("-o,--output", o.output, "write the per-device program here");
  partition_->add_flag("--verify", o.verify, "check numeric equivalence with the reference interpreter");
  partition_->add_flag("--propagate-only", o.propagate_only, "print the module with all shardings, unpartitioned");

  sweep_ = app.add_subcommand("sweep", "run a grid of workload variants");
  sweep_->add_option("sweep", o.input, "sweep YAML")->required();
  sweep_->add_option("-j", o.jobs, "parallel points");
  sweep_->add_option("--shard", o.shard, "run slice I/N of the grid");
  sweep_->add_option("-o", o.output, "results CSV");
  sweep_->add_option("--plot", o.plot, "plot file (svg|png)");

  regress_ = app.add_subcommand("regress", "compare workloads with tracked baselines");
  regress_->add_option("--baselines", o.baselines, "baseline folder");
  regress_->add_flag("--update", o.update, "rewrite the baselines");

  CLI::App* hardware = app.add_subcommand("hardware", "inspect hardware presets");
  hardware->require_subcommand(1);
  hardware_show_ = hardware->add_subcommand("show", "print a preset with derived figures");
  hardware_show_->add_option("preset", o.preset, "preset name or YAML path")->required();
}

int Commands::run() const {
  if (*partition_) return partition(options_);
  if (*run_) return run_workload(options_);
  if (*sweep_) not_implemented("sweep");
  if (*regress_) not_implemented("regress");
  if (*hardware_show_) return hardware_show(options_);
  return 0;
}

}  // namespace podsim::cli
