// `podsim sweep` (cli/sweep_command.h).
#include "cli/sweep_command.h"

#include <fmt/format.h>

#include "common/error.h"
#include "studies/sweep.h"

namespace podsim::cli {

CLI::App* add_sweep_command(CLI::App& app, SweepOptions& o) {
  CLI::App* sweep = app.add_subcommand(
      "sweep", "run a grid of workload variants (or: sweep merge A.csv B.csv ... -o out.csv)");
  sweep->add_option("sweep", o.inputs, "SWEEP.yaml, or 'merge' and the shard CSV files")
      ->required();
  // CLI11's PositiveNumber prints its upper bound as a 300-digit number; a
  // real range reads "Value 0 not in range 1 to 4096".
  sweep->add_option("-j", o.jobs, "points run at once (child processes)")
      ->check(CLI::Range(1, 4096));
  sweep->add_option("--shard", o.shard, "run slice I/N of the grid (e.g. $SLURM_ARRAY_TASK_ID/N)");
  sweep->add_option("-o,--output", o.output, "results CSV (default stdout)");
  sweep->add_option("--jsonl", o.jsonl, "also write one JSON object per point here");
  sweep->add_option("--plot", o.plot,
                    "plot file (svg|png), drawn with gnuplot; needs -o results.csv");
  sweep->add_option("--plot-metric", o.plot_metrics,
                    "report field to plot, one panel each (repeatable; default step_time_s)");
  sweep
      ->add_option("--timeout", o.timeout_seconds,
                   "kill a point running longer than S seconds (an error row)")
      ->check(CLI::Range(0.0, 1e9));
  return sweep;
}

int run_sweep_command(const SweepOptions& o) {
  if (!o.inputs.empty() && o.inputs.front() == "merge")
    return studies::merge_sweep_files(
        std::vector<std::string>(o.inputs.begin() + 1, o.inputs.end()), o.output);
  if (o.inputs.size() != 1)
    throw UserError(fmt::format("'podsim sweep' takes one SWEEP.yaml, got {}", o.inputs.size()),
                    "to join shard results: podsim sweep merge A.csv B.csv -o out.csv");
  studies::SweepRequest request;
  request.sweep_file = o.inputs.front();
  request.jobs = o.jobs;
  request.shard = o.shard;
  request.output = o.output;
  request.jsonl = o.jsonl;
  request.plot = o.plot;
  request.plot_metrics = o.plot_metrics;
  request.timeout_seconds = o.timeout_seconds;
  return studies::run_sweep(request);
}

}  // namespace podsim::cli
