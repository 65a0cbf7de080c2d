// Regression tracking (`podsim regress`): reports/baselines/ holds
// one JSON file per tracked workload run:
//   {
//     "workload": "../../workloads/small.yaml",   // relative to this file
//     "overrides": ["training.remat=none"],       // --set, optional
//     "fidelity": "fast",
//     "metrics": {
//       "step_time_s": {"value": 0.000917, "rel_tol": 0.01},
//       "peak_memory_bytes": {"value": 188032, "rel_tol": 0, "abs_tol": 0},
//       "fits_in_memory": {"value": true}
//     }
//   }
// A numeric metric changed when |actual - expected| > max(rel_tol x
// |expected|, abs_tol) (defaults 0: exact); any other value must match
// exactly. Any change fails the baseline (exit 1), whichever way it moved
// (the table says which: "CHANGED: faster", "CHANGED: more memory", ...):
// the simulator is deterministic, so a changed prediction needs a reviewed
// `--update`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "studies/job_runner.h"

namespace podsim::studies {

struct MetricBaseline {
  std::string name;              // flat report key (reports/flat_report.h)
  std::optional<double> number;  // numeric metrics
  std::string text;              // others ("true", "none", ...)
  double rel_tol = 0;
  double abs_tol = 0;
};

struct Baseline {
  std::string file;           // the baseline JSON
  std::string workload;       // as written in the file
  std::string workload_path;  // resolved against the file's folder
  std::vector<std::string> overrides;
  std::string fidelity = "fast";
  std::vector<MetricBaseline> metrics;
};

// UserError naming the file on malformed input.
Baseline parse_baseline(const std::string& json_text, const std::string& file_name);
Baseline load_baseline(const std::string& path);
// The *.json files of a folder, sorted by name; UserError when there is none.
std::vector<std::string> baseline_files(const std::string& dir);
// Pretty JSON with a fixed key order, ending in a newline.
std::string baseline_json(const Baseline& baseline);

struct MetricComparison {
  std::string name;
  std::string expected;
  std::string actual;          // "(missing)" when the run has no such field
  bool numeric = false;        // both sides numbers: compared by value
  double relative_change = 0;  // (actual - expected) / |expected|, numeric only
  bool within_tolerance = true;
};

struct BaselineComparison {
  std::string file;
  bool run_ok = true;
  std::string error;  // the run's error when !run_ok
  std::vector<MetricComparison> metrics;
  bool passed() const;
};

BaselineComparison compare_with_baseline(const Baseline& baseline, const JobOutcome& run);
// The baseline with every metric's value replaced by the run's (tolerances kept).
// UserError when the run failed or lacks a metric.
Baseline updated_baseline(const Baseline& baseline, const JobOutcome& run);

// A text table of the changes (only failing rows unless `all_rows`), then one
// summary line.
std::string regress_table(const std::vector<BaselineComparison>& comparisons,
                          bool all_rows = false);

// Where the shipped baselines (reports/baselines, measured.yaml included)
// are when no folder is given: under `cwd` when it holds them, else in the
// source tree around the running podsim, searched upward from its folder
// (build/cli/podsim -> ../../reports/baselines); "" when neither has them.
std::string find_baselines_dir(const std::string& executable, const std::string& cwd);
// find_baselines_dir for this podsim and the current folder; UserError
// naming `flag` (the option that gives it) when there is none.
std::string shipped_baselines_dir(const std::string& flag);

struct RegressOptions {
  std::string baselines_dir;
  bool update = false;
  ChildRunOptions children;
};

struct RegressResult {
  std::vector<BaselineComparison> comparisons;
  bool regressed = false;  // some baseline failed (before --update rewrote it)
  std::string table;
};

// Runs every baseline's workload as a child `podsim run`, compares, and with
// `update` rewrites each baseline whose run succeeded.
RegressResult run_regress(const RegressOptions& options);

// What `podsim regress` was asked.
struct RegressRequest {
  std::string baselines_dir;  // empty = shipped_baselines_dir
  bool update = false;
  int jobs = 1;
  bool all_rows = false;      // print unchanged metrics too
  std::string podsim_binary;  // empty = this executable
};

// Runs the baselines (a progress bar on stderr) and prints the table. Exit
// code 0 when every baseline holds, 1 on a regression (also with update,
// which rewrites the baselines after reporting).
int regress(const RegressRequest& request);

}  // namespace podsim::studies
