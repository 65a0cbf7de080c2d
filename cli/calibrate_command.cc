// `podsim calibrate` (cli/calibrate_command.h).
#include "cli/calibrate_command.h"

#include "studies/calibrate.h"

namespace podsim::cli {

CLI::App* add_calibrate_command(CLI::App& app, CalibrateOptions& o) {
  CLI::App* calibrate = app.add_subcommand(
      "calibrate", "predicted vs measured throughput of the calibration configs");
  calibrate->add_option(
      "--measured", o.measured_file,
      "measured numbers (default: measured.yaml in the baselines folder regress finds)");
  calibrate->add_option("-o,--output", o.output, "markdown table (default stdout)");
  calibrate
      ->add_option("-j", o.jobs,
                   "workloads run at once (--fit: every workload's server works at once)")
      ->check(CLI::Range(1, 4096));
  calibrate->add_flag(
      "--fit", o.fit,
      "fit the hardware parameters listed under 'fit:' (one set for all configs) and predict "
      "each config from a fit to the others");
  calibrate
      ->add_option("--max-evaluations", o.max_evaluations,
                   "--fit: parameter sets per search at most")
      ->check(CLI::Range(1, 100000));
  return calibrate;
}

int run_calibrate_command(const CalibrateOptions& o) {
  studies::CalibrateRequest request;
  request.measured_file = o.measured_file;
  request.output = o.output;
  request.jobs = o.jobs;
  request.fit = o.fit;
  request.max_evaluations = o.max_evaluations;
  return studies::calibrate(request);
}

}  // namespace podsim::cli
