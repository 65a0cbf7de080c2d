// Registration and dispatch of podsim's subcommands (docs/design.md, "Command line").
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace podsim::cli {

// Everything the user can say on the command line, filled by CLI11.
struct Options {
  std::string input;
  std::vector<std::string> sets;  // --set key=value
  std::string format = "table";
  std::string fidelity = "fast";
  std::string trace;
  std::string trace_devices;  // run --trace: "0,5,17" | "sample:4" | "all"
  std::string trace_window;   // run --trace: "A:B" in ms of the step
  std::string trace_limit;    // run --trace: bytes ("20MB"); 0 = none
  std::string mesh;
  std::string output;
  bool verify = false;
  std::string verify_limit;  // partition --verify: interpreter memory limit ("4GiB"; default 2 GiB)
  bool verify_full_only = false;  // partition --verify: refuse instead of checking at reduced shapes
  bool propagate_only = false;
  bool no_propagate_to_parameters = false;
  bool no_propagate_to_output = false;
  bool serve = false;    // run: compile once, simulate one hardware variant per stdin line
  bool timings = false;  // run: wall times in json/csv (reports::FormatOptions)
  int jobs = 1;
  std::vector<std::string> inputs;  // sweep: SWEEP.yaml, or "merge" + CSV files
  std::string jsonl;
  double timeout_seconds = 0;  // sweep: kill a point running longer (0 = never)
  std::string measured;
  bool fit = false;           // calibrate --fit
  int max_evaluations = 400;  // calibrate --fit
  bool all_rows = false;
  std::string shard;
  std::string plot;
  std::vector<std::string> plot_metrics;  // sweep --plot-metric (default step_time_s)
  std::string baselines;
  bool update = false;
  std::string preset;
  std::string hardware;  // run MODULE.hlo: preset or YAML
  int64_t tokens = 0;    // run MODULE.hlo: tokens per step
  std::string mode;      // run / partition MODULE.hlo: auto | partition | as-is
};

class Commands {
 public:
  // Adds run, partition, sweep, regress, calibrate and hardware show/list to the app.
  explicit Commands(CLI::App& app);
  // Runs the subcommand the user chose; returns the process exit code.
  // Throws podsim::UserError for bad input.
  int run() const;

 private:
  Options options_;
  CLI::App* run_ = nullptr;
  CLI::App* partition_ = nullptr;
  CLI::App* sweep_ = nullptr;
  CLI::App* regress_ = nullptr;
  CLI::App* calibrate_ = nullptr;
  CLI::App* hardware_show_ = nullptr;
  CLI::App* hardware_list_ = nullptr;
};

}  // namespace podsim::cli
