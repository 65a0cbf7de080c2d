// Running `podsim run` as child processes: SystemC allows one
// kernel per process, and a point that crashes (signal, abort, nonzero exit)
// must become an error row, never take the sweep, regression run or
// calibration down. Each child writes `--format csv` to a temporary file;
// its header + row become the point's flat report fields. A sweep's points
// that share a compile (all but hardware.* keys equal) go to one
// `run --serve` child instead (workload_server.h).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "driver/child_process.h"
#include "studies/sweep.h"

namespace podsim::studies {

using driver::JobOutcome;

// One `podsim run` invocation.
struct RunJob {
  std::string workload_path;
  std::vector<std::string> overrides;  // --set key=value
  std::string fidelity = "fast";
};

struct ChildRunOptions {
  std::string podsim_binary;  // path of the podsim executable
  int jobs = 1;               // children at once (>= 1)
  double timeout_seconds = 0;  // > 0: a child running longer is killed (error row)
  // Called after each child ends with (done, total); may be empty.
  std::function<void(int done, int total)> on_progress;
};

// Runs every job (at most `jobs` at once); the outcomes are in job order.
std::vector<JobOutcome> run_jobs(const std::vector<RunJob>& jobs, const ChildRunOptions& options);

// Points that share one compile: the same overrides apart from hardware.*
// keys (`compile_overrides`, for --set), each point's hardware.* overrides
// (`variants`, for a `run --serve` line), in first-seen order.
struct CompileGroup {
  std::vector<std::string> compile_overrides;       // "key=value"
  std::vector<size_t> points;                       // indices into the points
  std::vector<std::vector<std::pair<std::string, std::string>>> variants;  // per point: key without "hardware."
};
std::vector<CompileGroup> group_by_compile(const SweepSpec& spec, const std::vector<SweepPoint>& points);

// What run_sweep_points started: `podsim run --serve` children (one compile
// each, for a group of two or more points) and one-point `podsim run`
// children (a single-point group, or a point a server failed or could not
// answer, rerun alone so its error row reads as before).
struct SweepRunStats {
  int serve_children = 0;
  int point_children = 0;
};

// A sweep's results (sweep.h PointResult), in point order: each compile
// group of two or more points is one `run --serve` child fed its points'
// hardware overrides (up to options.jobs groups at once; with fewer groups
// than jobs, the largest are cut into contiguous parts, one child each);
// timeout_seconds bounds each answer (the first includes the compile). A
// point a server rejects, or could not answer, runs alone as before.
std::vector<PointResult> run_sweep_points(const SweepSpec& spec, const std::vector<SweepPoint>& points,
                                          const ChildRunOptions& options, SweepRunStats* stats = nullptr);


}  // namespace podsim::studies
