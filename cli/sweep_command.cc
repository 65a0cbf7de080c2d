// `podsim sweep` (cli/sweep_command.h).
#include "cli/sweep_command.h"

#include <fmt/format.h>

#include <filesystem>

#include "common/error.h"
#include "studies/slurm.h"
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
  CLI::Option_group* slurm =
      sweep->add_option_group("Slurm", "run the sweep as one Slurm array job");
  slurm->add_flag("--slurm", o.slurm,
                  "submit one array job (task i runs --shard i/N into <out>.slurm/), wait, merge");
  slurm->add_option("--tasks", o.tasks, "array tasks (default: points, at most 16)")
      ->check(CLI::Range(1, 100000));
  slurm->add_option("--partition", o.partition, "Slurm partition (default: the cluster's)");
  slurm->add_option("--time-limit", o.time_limit, "each task's time limit (sbatch --time)");
  slurm->add_option("--sbatch-arg", o.sbatch_args,
                    "extra sbatch option, one per flag (e.g. --sbatch-arg=--account=X)");
  slurm->add_flag("--no-wait", o.no_wait,
                  "print the job id and return; later: podsim sweep merge <out>.slurm -o out.csv");
  slurm->add_flag("--resume", o.resume,
                  "resubmit only the tasks that left no shard table, then merge");
  return sweep;
}

int run_sweep_command(const SweepOptions& o) {
  const bool slurm_options = o.tasks != 0 || !o.partition.empty() || !o.time_limit.empty() ||
                             !o.sbatch_args.empty() || o.no_wait || o.resume;
  if (slurm_options && !o.slurm)
    throw UserError(
        "--tasks, --partition, --time-limit, --sbatch-arg, --no-wait and --resume "
        "are options of --slurm",
        "add --slurm");
  if (o.inputs.size() == 2 && o.inputs.front() == "merge" &&
      std::filesystem::is_directory(o.inputs[1]))
    return studies::finish_slurm_sweep(o.inputs[1], o.output, *studies::system_command_runner());
  if (!o.inputs.empty() && o.inputs.front() == "merge")
    return studies::merge_sweep_files(
        std::vector<std::string>(o.inputs.begin() + 1, o.inputs.end()), o.output);
  if (o.inputs.size() != 1)
    throw UserError(fmt::format("'podsim sweep' takes one SWEEP.yaml, got {}", o.inputs.size()),
                    "to join shard results: podsim sweep merge A.csv B.csv -o out.csv");
  if (o.slurm) {
    if (!o.shard.empty() || !o.jsonl.empty() || !o.plot.empty())
      throw UserError("--slurm runs every shard itself and writes only the merged CSV",
                      "drop --shard/--jsonl/--plot (plot the merged CSV afterwards)");
    studies::SlurmSweepRequest request;
    request.sweep_file = o.inputs.front();
    request.output = o.output;
    request.tasks = o.tasks;
    request.partition = o.partition;
    request.time_limit = o.time_limit;
    request.sbatch_args = o.sbatch_args;
    request.jobs = o.jobs;
    request.timeout_seconds = o.timeout_seconds;
    request.wait = !o.no_wait;
    request.resume = o.resume;
    return studies::run_sweep_on_slurm(request, *studies::system_command_runner());
  }
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
