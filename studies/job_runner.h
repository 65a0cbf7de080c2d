// Running `podsim run` as child processes, several at once: SystemC allows
// one kernel per process, and a run that crashes (signal, abort, nonzero
// exit) must become an error outcome, never take the sweep, regression run
// or calibration down. Each child writes `--format csv` to a file in a
// private temporary folder; its header + row become the outcome's report.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "driver/child_process.h"

namespace podsim::studies {

using driver::JobOutcome;

// One `podsim run` invocation.
struct RunJob {
  std::string workload_path;
  std::vector<std::string> overrides;  // --set key=value
  std::string fidelity = "fast";
};

struct ChildRunOptions {
  std::string podsim_binary;   // path of the podsim executable
  int jobs = 1;                // children at once (>= 1)
  double timeout_seconds = 0;  // > 0: a child running longer is killed (error row)
  // Called after each child ends with (done, total); may be empty.
  std::function<void(int done, int total)> on_progress;
};

// Runs every job (at most `jobs` at once); the outcomes are in job order.
std::vector<JobOutcome> run_jobs(const std::vector<RunJob>& jobs, const ChildRunOptions& options);

}  // namespace podsim::studies
