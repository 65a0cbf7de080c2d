// Until the merge: the old entry points cli/commands.cc still calls, as
// thin forwards to cli/{sweep,regress,calibrate}_command.h (the coordinator
// replaces their registration in cli/main.cc and deletes this file).
#pragma once

#include <string>
#include <vector>

#include "cli/calibrate_command.h"
#include "cli/regress_command.h"
#include "cli/sweep_command.h"

namespace podsim::cli {

struct SweepCommandOptions {
  std::string sweep_file;
  int jobs = 1;
  std::string shard;
  std::string output;
  std::string jsonl;
  std::string plot;
  std::vector<std::string> plot_metrics;
  double timeout_seconds = 0;
};

inline int sweep_command(const SweepCommandOptions& o) {
  return run_sweep_command(SweepOptions{{o.sweep_file}, o.jobs, o.shard, o.output, o.jsonl, o.plot, o.plot_metrics,
                                        o.timeout_seconds});
}

inline int sweep_merge_command(const std::vector<std::string>& inputs, const std::string& output) {
  SweepOptions options;
  options.inputs = {"merge"};
  options.inputs.insert(options.inputs.end(), inputs.begin(), inputs.end());
  options.output = output;
  return run_sweep_command(options);
}

struct RegressCommandOptions {
  std::string baselines_dir;
  bool update = false;
  int jobs = 1;
  bool all_rows = false;
};

inline int regress_command(const RegressCommandOptions& o) {
  return run_regress_command(RegressOptions{o.baselines_dir, o.update, o.jobs, o.all_rows});
}

struct CalibrateCommandOptions {
  std::string measured_file;
  std::string output;
  int jobs = 1;
  bool fit = false;
  int max_evaluations = 400;
};

inline int calibrate_command(const CalibrateCommandOptions& o) {
  return run_calibrate_command(CalibrateOptions{o.measured_file, o.output, o.jobs, o.fit, o.max_evaluations});
}

}  // namespace podsim::cli
