// podsim subcommands. Options follow DESIGN.md's command-line contract;
// commands whose layer does not exist yet say so and exit 2.
#include "cli/commands.h"

#include <fmt/format.h>

#include <cstdio>
#include <fstream>

#include "common/error.h"
#include "compiler/hlo/hlo_parser.h"
#include "compiler/hlo/hlo_printer.h"
#include "compiler/ir/verifier.h"

namespace podsim::cli {

namespace {

[[noreturn]] void not_implemented(const std::string& command) {
  throw UserError(fmt::format("'podsim {}' is not implemented yet", command),
                  "see the project's open issues; available now: partition (parse, verify, print)");
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

int partition(const Options& o) {
  compiler::Module module = compiler::parse_hlo_file(o.input);
  compiler::verify_module(module);
  if (!o.mesh.empty() || o.verify || o.propagate_only) not_implemented("partition --mesh/--verify/--propagate-only");
  write_output(o.output, compiler::print_hlo(module));
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
  if (*run_) not_implemented("run");
  if (*sweep_) not_implemented("sweep");
  if (*regress_) not_implemented("regress");
  if (*hardware_show_) not_implemented("hardware show");
  return 0;
}

}  // namespace podsim::cli
