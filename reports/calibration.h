// Calibration (issue 8, `podsim calibrate`): podsim's prediction against
// every measured number in /work/shared/reference/anchors.md, listed in a
// data file (reports/baselines/measured.yaml):
//   source: anchors.md ...
//   points:
//     - config: DenseLm128B8x8
//       workload: ../../workloads/dense_128b_8x8.yaml   # relative to this file
//       metric: tokens_per_second        # or steps_per_second
//       measured: 3700
//       source: "anchors.md Calibration set: ~3.7k tokens/s"
// The error is predicted / measured - 1. Nothing is tuned per workload: the
// table only reports.
#pragma once

#include <string>
#include <vector>

#include "reports/sweep_runner.h"

namespace podsim::reports {

// Issue #8's bar: a calibration config is good when |predicted/measured - 1|
// is at most this.
inline constexpr double kCalibrationTolerance = 0.15;

struct MeasuredPoint {
  std::string config;
  std::string workload;       // as written
  std::string workload_path;  // resolved against the data file's folder
  std::string metric;         // "tokens_per_second" | "steps_per_second"
  double measured = 0;
  std::string source;
};

struct MeasuredSet {
  std::string file;
  std::string source;
  std::string notes;  // markdown printed under the table (analysis of the misses)
  std::vector<MeasuredPoint> points;
};

// Positioned UserError on malformed input.
MeasuredSet parse_measured(const std::string& yaml_text, const std::string& file_name);
MeasuredSet load_measured(const std::string& path);

struct CalibrationRow {
  MeasuredPoint point;
  bool ok = false;
  std::string error;
  double predicted = 0;       // in the point's metric
  double relative_error = 0;  // predicted / measured - 1
  double step_time_s = 0;
  double mfu = 0;
};

// steps_per_second = 1 / step_time_s; tokens_per_second is the report field.
CalibrationRow calibration_row(const MeasuredPoint& point, const JobOutcome& run);

// Runs every point (fast fidelity) as a child `podsim run`.
std::vector<CalibrationRow> run_calibration(const MeasuredSet& set, const ChildRunOptions& options);

// Markdown page: how it was made, the table, the mean |error| over the points
// that ran, and the failures.
std::string calibration_markdown(const MeasuredSet& set, const std::vector<CalibrationRow>& rows);

}  // namespace podsim::reports
