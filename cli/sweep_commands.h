// `podsim sweep`, `podsim sweep merge`, `podsim regress` and `podsim
// calibrate`. Plain functions the CLI11 app in cli/commands.cc
// dispatches to; each returns the process exit code and throws
// podsim::UserError for bad input.
#pragma once

#include <string>
#include <vector>

namespace podsim::cli {

struct SweepCommandOptions {
  std::string sweep_file;
  int jobs = 1;             // -j N: children at once
  std::string shard;        // --shard I/N, empty = all points
  std::string output;       // -o results.csv, empty or "-" = stdout
  std::string jsonl;        // --jsonl F: also write JSON lines
  std::string plot;         // --plot out.svg|png (gnuplot)
  std::vector<std::string> plot_metrics;  // --plot-metric F (repeatable); empty = step_time_s
  std::string podsim_binary;  // empty = this executable
  double timeout_seconds = 0;  // --timeout S: kill a point running longer (0 = never)
};
// Exit 0 when every point ran, 1 when some point failed (its row says why).
int sweep_command(const SweepCommandOptions& options);

// podsim sweep merge A.csv B.csv ... -o out.csv
int sweep_merge_command(const std::vector<std::string>& inputs, const std::string& output);

struct RegressCommandOptions {
  std::string baselines_dir;  // empty = reports/baselines (the cwd's, else the source tree's)
  bool update = false;
  int jobs = 1;
  bool all_rows = false;      // print unchanged metrics too
  std::string podsim_binary;
};
// Exit 0 when every baseline holds, 1 on a regression (also with --update,
// which rewrites the baselines after reporting).
int regress_command(const RegressCommandOptions& options);

struct CalibrateCommandOptions {
  std::string measured_file;  // empty = reports/baselines/measured.yaml (found as regress's folder)
  std::string output;         // markdown; empty or "-" = stdout
  int jobs = 1;
  std::string podsim_binary;
  bool fit = false;            // --fit: fit the `fit:` parameters, with leave-one-out
  int max_evaluations = 400;   // --fit: variants per search at most
};
int calibrate_command(const CalibrateCommandOptions& options);

}  // namespace podsim::cli
