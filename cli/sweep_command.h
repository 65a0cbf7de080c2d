// `podsim sweep SWEEP.yaml` and `podsim sweep merge A.csv B.csv ... -o
// out.csv`: argument handling; the work is studies/sweep.h's.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace podsim::cli {

struct SweepOptions {
  std::vector<std::string> inputs;        // SWEEP.yaml, or "merge" + the shard CSV files
  int jobs = 1;                           // -j N: children at once
  std::string shard;                      // --shard I/N, empty = all points
  std::string output;                     // -o results.csv, empty or "-" = stdout
  std::string jsonl;                      // --jsonl F: also write JSON lines
  std::string plot;                       // --plot out.svg|png (gnuplot)
  std::vector<std::string> plot_metrics;  // --plot-metric F (repeatable); empty = step_time_s
  double timeout_seconds = 0;             // --timeout S: kill a point running longer (0 = never)
  // --slurm: one Slurm array job of --tasks shards, waited for and merged.
  bool slurm = false;
  int tasks = 0;                         // --tasks N, 0 = min(points, 16)
  std::string partition;                 // --partition P
  std::string time_limit;                // --time-limit T (sbatch --time)
  std::vector<std::string> sbatch_args;  // --sbatch-arg A (repeatable)
  bool no_wait = false;                  // --no-wait: print the job id, merge later
  bool resume = false;                   // --resume: resubmit the tasks without a table
};

CLI::App* add_sweep_command(CLI::App& app, SweepOptions& options);
// Exit 0 when every point ran, 1 when some point failed (its row says why).
int run_sweep_command(const SweepOptions& options);

}  // namespace podsim::cli
