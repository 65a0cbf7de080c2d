// `podsim calibrate`: the table of predicted against measured numbers
// (studies/calibration.h), or with `fit` the fit of the hardware parameters
// (studies/fit.h), written as markdown (studies/calibration_markdown.h).
#pragma once

#include <string>

namespace podsim::studies {

// What `podsim calibrate` was asked.
struct CalibrateRequest {
  std::string measured_file;  // empty = measured.yaml in shipped_baselines_dir (studies/regress.h)
  std::string output;         // markdown; empty or "-" = stdout
  int jobs = 1;
  std::string podsim_binary;  // empty = this executable
  bool fit = false;           // fit the `fit:` parameters, with leave-one-out
  int max_evaluations = 400;  // fit: variants per search at most
};

// Runs the workloads (progress on stderr) and writes the page. With `fit`,
// after each search the page so far goes to the output file (a stopped fit
// leaves what it found). Exit code 0; UserError for bad input.
int calibrate(const CalibrateRequest& request);

}  // namespace podsim::studies
