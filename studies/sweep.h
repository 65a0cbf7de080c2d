// `podsim sweep`: running a sweep's points (studies/sweep_spec.h) as child
// processes and writing its tables. Points that share a compile (all but
// hardware.* keys equal) go to one `run --serve` child
// (driver/workload_server.h); the others, and any point a server failed or
// could not answer, to one-point `podsim run` children (studies/job_runner.h).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "studies/job_runner.h"
#include "studies/sweep_spec.h"

namespace podsim::studies {

// Points that share one compile: the same overrides apart from hardware.*
// keys (`compile_overrides`, for --set), each point's hardware.* overrides
// (`variants`, for a `run --serve` line), in first-seen order.
struct CompileGroup {
  std::vector<std::string> compile_overrides;  // "key=value"
  std::vector<size_t> points;                  // indices into the points
  std::vector<std::vector<std::pair<std::string, std::string>>>
      variants;  // per point: key without "hardware."
};
std::vector<CompileGroup> group_by_compile(const SweepSpec& spec,
                                           const std::vector<SweepPoint>& points);

// Fewer groups than `jobs` leave cores idle: the largest groups are cut into
// contiguous parts (neighbours in the grid tend to share a variant program
// in the server's cache) of at least two points, until there are `jobs`.
std::vector<CompileGroup> split_for_jobs(std::vector<CompileGroup> groups, size_t jobs);

// What run_sweep_points started: `podsim run --serve` children (one compile
// each, for a group of two or more points) and one-point `podsim run`
// children (a single-point group, or a point a server failed or could not
// answer, rerun alone so its error row reads as before).
struct SweepRunStats {
  int serve_children = 0;
  int point_children = 0;
};

// A sweep's results, in point order: each compile group of two or more
// points is one `run --serve` child fed its points' hardware overrides (up
// to options.jobs groups at once; with fewer groups than jobs, the largest
// are cut by split_for_jobs); timeout_seconds bounds each answer (the first
// includes the compile). A point a server rejects, or could not answer, runs
// alone as before.
std::vector<PointResult> run_sweep_points(const SweepSpec& spec,
                                          const std::vector<SweepPoint>& points,
                                          const ChildRunOptions& options,
                                          SweepRunStats* stats = nullptr);

// What `podsim sweep SWEEP.yaml` was asked.
struct SweepRequest {
  std::string sweep_file;
  int jobs = 1;                           // children at once
  std::string shard;                      // I/N, empty = all points
  std::string output;                     // results CSV, empty or "-" = stdout
  std::string jsonl;                      // also write JSON lines here
  std::string plot;                       // plot file (svg|png), drawn with gnuplot
  std::vector<std::string> plot_metrics;  // empty = step_time_s
  std::string podsim_binary;              // empty = this executable
  double timeout_seconds = 0;             // kill a point running longer (0 = never)
};

// The sweep's keys checked against its base workload before any point runs:
// the first point's overrides are read as its child would read them, and an
// unknown key is a UserError where the sweep file writes it, with the
// reader's suggestion. Other errors of a point (a mesh that does not fit)
// stay that point's error row.
void check_sweep_keys(const SweepSpec& spec, const std::vector<SweepPoint>& points);

// Runs the points (a progress bar on stderr), writes the table (and JSON
// lines, and the plot), and a summary line on stderr. Exit code 0 when every
// point ran and the plot was drawn, 1 when some point failed (its row says
// why); UserError for a bad request, before any point runs.
int run_sweep(const SweepRequest& request);

// `podsim sweep merge A.csv B.csv ... -o out.csv`: joins shard tables.
int merge_sweep_files(const std::vector<std::string>& inputs, const std::string& output);

}  // namespace podsim::studies
