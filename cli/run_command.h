// `podsim run`: simulate a workload (or an HLO module) and report; with
// --serve, answer hardware variants of one compile on stdin.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace podsim::cli {

struct RunOptions {
  std::string input;              // workload YAML or HLO module
  std::vector<std::string> sets;  // --set key=value
  std::string format = "table";
  std::string fidelity = "fast";
  std::string trace;
  std::string trace_devices;  // "0,5,17" | "sample:4" | "all"
  std::string trace_window;   // "A:B" in ms of the step
  std::string trace_limit;    // bytes ("20MB"); 0 = none
  std::string output;
  bool serve = false;
  bool timings = false;
  bool every_iteration = false;  // --every-iteration
  bool no_symmetry = false;      // --no-symmetry
  double time_limit = 0;         // --time-limit (s; 0 = none)
  std::string hardware;  // HLO module: preset or YAML
  std::string mesh;      // HLO module: "x=8"
  int64_t tokens = 0;    // HLO module: tokens per step
  int64_t slices = 1;    // HLO module: slices the devices split into (--slices)
  std::string mode;      // HLO module: auto | partition | as-is
};

CLI::App* add_run_command(CLI::App& app, RunOptions& options);
int run_run_command(const RunOptions& options);

}  // namespace podsim::cli
