// podsim command line: creates the app, registers every subcommand (one
// file and one options struct each: cli/<name>_command.h) and runs the one
// chosen. User errors (podsim::UserError) print one message and exit 2.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>

#include "cli/calibrate_command.h"
#include "cli/hardware_command.h"
#include "cli/partition_command.h"
#include "cli/regress_command.h"
#include "cli/run_command.h"
#include "cli/sweep_command.h"
#include "common/error.h"

int main(int argc, char** argv) {
  using namespace podsim::cli;
  CLI::App app{"podsim: GSPMD-style sharding compiler and TPU pod simulator"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "podsim 0.1.0");

  RunOptions run_options;
  CLI::App* run = add_run_command(app, run_options);
  PartitionOptions partition_options;
  CLI::App* partition = add_partition_command(app, partition_options);

  SweepOptions sweep_options;
  CLI::App* sweep = add_sweep_command(app, sweep_options);
  RegressOptions regress_options;
  CLI::App* regress = add_regress_command(app, regress_options);
  CalibrateOptions calibrate_options;
  CLI::App* calibrate = add_calibrate_command(app, calibrate_options);

  HardwareOptions hardware_options;
  CLI::App* hardware = add_hardware_command(app, hardware_options);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : podsim::kUserErrorExitCode;
  }
  try {
    if (*run) return run_run_command(run_options);
    if (*partition) return run_partition_command(partition_options);
    if (*hardware) return run_hardware_command(hardware_options);
    if (*sweep) return run_sweep_command(sweep_options);
    if (*regress) return run_regress_command(regress_options);
    if (*calibrate) return run_calibrate_command(calibrate_options);
    return 0;
  } catch (const podsim::UserError& e) {
    std::fflush(stdout);
    fmt::print(stderr, "podsim: {}\n", e.what());
    return podsim::kUserErrorExitCode;
  }
}
