// Calibration (`podsim calibrate`): podsim's prediction against every
// measured number of docs/reference/measurements.md, listed in
// reports/baselines/measured.yaml (format:
// docs/reference/measurements.md#the-measured-numbers-file). The error is
// predicted / measured - 1; nothing is tuned per workload. Rows marked
// `inconsistent` stay out of the statistics and `--fit`; `checks:` compare
// other report fields (a share of the step, a bound, a range).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "studies/flop_rules.h"
#include "studies/job_runner.h"

namespace podsim::studies {

// The bar of a check of another measured number: it holds when
// |predicted/measured - 1| is at most this.
inline constexpr double kCalibrationTolerance = 0.15;
// The bar of a calibration row: no row beyond this, and the mean |error|
// over the rows at most kCalibrationMeanLimit.
inline constexpr double kCalibrationRowLimit = 0.10;
inline constexpr double kCalibrationMeanLimit = 0.05;

// A row of a published "TFLOP/s per chip" table: the table counted model
// FLOPs by its own rule (flop_rules.h), so the measured tokens/s is
// tflops_per_chip x chips / flops_per_token of the workload's model.
struct PublishedThroughput {
  FlopRule rule = FlopRule::kSixP;
  double tflops_per_chip = 0;  // as published
  double mfu = 0;              // as published (of the table's peak)
  int64_t chips = 0;
  double flops_per_token = 0;  // by `rule`, of the workload's model
};

struct MeasuredPoint {
  std::string config;
  std::string workload;       // as written
  std::string workload_path;  // resolved against the data file's folder
  std::string metric;         // "tokens_per_second" | "steps_per_second" | "mfu"
  double measured = 0;
  std::string source;
  std::string inconsistent;  // non-empty: why the measurement is not a target
  // Given for a published TFLOP/s row: `measured` (tokens/s) is derived.
  std::optional<PublishedThroughput> published;
};

// One other measured number (see above); exactly one of measured / at_least
// / range is given.
struct MeasuredCheck {
  enum class Kind { kValue, kAtLeast, kRange };
  std::string config;
  std::string workload;       // as written
  std::string workload_path;  // resolved against the data file's folder
  std::string quantity;       // what the number is, for the table
  std::string field;          // flat report field
  bool per_step = false;      // divide the field by step_time_s
  Kind kind = Kind::kValue;
  double measured = 0;       // kValue, kAtLeast
  double low = 0, high = 0;  // kRange
  std::string source;
  // Non-empty: this number was used to choose the named parameter's value
  // (hardware.md), so it is shown but no longer counted as independent
  // evidence.
  std::string chose;
};

// A hardware parameter `podsim calibrate --fit` may move, within the range
// physics allows (studies/fit.h). 0 < low < high.
struct FitParameter {
  std::string key;  // hardware key, without "hardware."
  double low = 0, high = 0;
  std::string why;  // where the range comes from
};

struct MeasuredSet {
  std::string file;
  std::string source;
  std::string notes;  // markdown printed under the table (analysis of the misses)
  std::vector<MeasuredPoint> points;
  std::vector<MeasuredCheck> checks;
  std::vector<FitParameter> fit;
};

// Positioned UserError on malformed input.
MeasuredSet parse_measured(const std::string& yaml_text, const std::string& file_name);
MeasuredSet load_measured(const std::string& path);

// Where a row's step goes, from its report (shares of the step time).
struct TimeSplit {
  std::string hardware;
  double mxu_bound = 0, vpu_bound = 0, memory_bound = 0, overhead = 0, exposed_communication = 0;
  double forward = 0, recompute = 0, backward = 0;
  double hfu = 0;
  double peak_memory_bytes = 0, hbm_capacity_bytes = 0;
};

struct CalibrationRow {
  MeasuredPoint point;
  bool ok = false;
  std::string error;
  double predicted = 0;       // in the point's metric
  double relative_error = 0;  // predicted / measured - 1
  double step_time_s = 0;
  double mfu = 0;
  // Published rows: the prediction in the table's own units.
  double predicted_tflops_per_chip = 0;
  double predicted_published_mfu = 0;
  TimeSplit split;
};

// steps_per_second = 1 / step_time_s; tokens_per_second and mfu are report
// fields (mfu: model FLOPs per step / (peak x devices x step time)).
CalibrationRow calibration_row(const MeasuredPoint& point, const JobOutcome& run);

struct CheckRow {
  MeasuredCheck check;
  bool ok = false;  // the run gave the field
  std::string error;
  double predicted = 0;
  bool holds = false;         // kValue: within kCalibrationTolerance; else bound / range met
  double relative_error = 0;  // kValue: predicted / measured - 1
};

CheckRow check_row(const MeasuredCheck& check, const JobOutcome& run);

struct CalibrationResult {
  std::vector<CalibrationRow> rows;
  std::vector<CheckRow> checks;
};

// The index of `path` in `workloads`, appended when it is not there yet:
// each workload is run (or served) once, however many points read it.
size_t workload_index(std::vector<std::string>& workloads, const std::string& path);

// Runs every workload of the points and checks once (fast fidelity) as a
// child `podsim run`.
CalibrationResult run_calibration(const MeasuredSet& set, const ChildRunOptions& options);

}  // namespace podsim::studies
