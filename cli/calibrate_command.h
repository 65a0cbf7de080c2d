// `podsim calibrate`: argument handling; the work is studies/calibrate.h's.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace podsim::cli {

struct CalibrateOptions {
  std::string measured_file;  // --measured FILE, empty = measured.yaml in the baselines folder
                              // regress finds
  std::string output;         // -o: markdown; empty or "-" = stdout
  int jobs = 1;               // -j N
  bool fit = false;           // --fit: fit the `fit:` parameters, with leave-one-out
  int max_evaluations = 400;  // --max-evaluations: --fit's variants per search at most
};

CLI::App* add_calibrate_command(CLI::App& app, CalibrateOptions& options);
int run_calibrate_command(const CalibrateOptions& options);

}  // namespace podsim::cli
