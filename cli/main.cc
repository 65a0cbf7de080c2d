// podsim command line: creates the app, registers every subcommand (one
// file and one options struct each: cli/<name>_command.h) and runs the one
// chosen. User errors (podsim::UserError) print one message and exit 2.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <string>
#include <vector>

#include "cli/hardware_command.h"
#include "cli/partition_command.h"
#include "cli/run_command.h"
#include "cli/sweep_commands.h"
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

  // ---- BEGIN sweep/regress/calibrate (through cli/sweep_commands.h; replaced
  // by add_/run_{sweep,regress,calibrate}_command at merge) ----
  // -j: CLI11's PositiveNumber prints its upper bound as a 300-digit number;
  // a real range reads "Value 0 not in range 1 to 4096".
  const CLI::Range jobs_range(1, 4096);
  std::vector<std::string> sweep_inputs;  // SWEEP.yaml, or "merge" + CSV files
  SweepCommandOptions sweep_options;
  CLI::App* sweep =
      app.add_subcommand("sweep", "run a grid of workload variants (or: sweep merge A.csv B.csv ... -o out.csv)");
  sweep->add_option("sweep", sweep_inputs, "SWEEP.yaml, or 'merge' and the shard CSV files")->required();
  sweep->add_option("-j", sweep_options.jobs, "points run at once (child processes)")->check(jobs_range);
  sweep->add_option("--shard", sweep_options.shard, "run slice I/N of the grid (e.g. $SLURM_ARRAY_TASK_ID/N)");
  sweep->add_option("-o,--output", sweep_options.output, "results CSV (default stdout)");
  sweep->add_option("--jsonl", sweep_options.jsonl, "also write one JSON object per point here");
  sweep->add_option("--plot", sweep_options.plot, "plot file (svg|png), drawn with gnuplot; needs -o results.csv");
  sweep->add_option("--plot-metric", sweep_options.plot_metrics,
                    "report field to plot, one panel each (repeatable; default step_time_s)");
  sweep->add_option("--timeout", sweep_options.timeout_seconds,
                    "kill a point running longer than S seconds (an error row)")
      ->check(CLI::Range(0.0, 1e9));

  RegressCommandOptions regress_options;
  CLI::App* regress = app.add_subcommand("regress", "compare workloads with tracked baselines");
  regress->add_option("--baselines", regress_options.baselines_dir,
                      "baseline folder (default: reports/baselines here, else in the source tree of this podsim)");
  regress->add_flag("--update", regress_options.update, "rewrite the baselines");
  regress->add_option("-j", regress_options.jobs, "workloads run at once")->check(jobs_range);
  regress->add_flag("--all", regress_options.all_rows, "print unchanged metrics too");

  CalibrateCommandOptions calibrate_options;
  CLI::App* calibrate =
      app.add_subcommand("calibrate", "predicted vs measured throughput of the calibration configs");
  calibrate->add_option("--measured", calibrate_options.measured_file,
                        "measured numbers (default: measured.yaml in the baselines folder regress finds)");
  calibrate->add_option("-o,--output", calibrate_options.output, "markdown table (default stdout)");
  calibrate->add_option("-j", calibrate_options.jobs, "workloads run at once (--fit: every workload's server works at once)")
      ->check(jobs_range);
  calibrate->add_flag("--fit", calibrate_options.fit,
                      "fit the hardware parameters listed under 'fit:' (one set for all configs) and predict "
                      "each config from a fit to the others");
  calibrate->add_option("--max-evaluations", calibrate_options.max_evaluations,
                        "--fit: parameter sets per search at most")
      ->check(CLI::Range(1, 100000));
  auto run_study = [&]() -> int {
    if (*sweep) {
      if (sweep_inputs.front() == "merge")
        return sweep_merge_command(std::vector<std::string>(sweep_inputs.begin() + 1, sweep_inputs.end()),
                                   sweep_options.output);
      if (sweep_inputs.size() != 1)
        throw podsim::UserError(fmt::format("'podsim sweep' takes one SWEEP.yaml, got {}", sweep_inputs.size()),
                                "to join shard results: podsim sweep merge A.csv B.csv -o out.csv");
      sweep_options.sweep_file = sweep_inputs.front();
      return sweep_command(sweep_options);
    }
    if (*regress) return regress_command(regress_options);
    return calibrate_command(calibrate_options);
  };
  // ---- END sweep/regress/calibrate ----

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
    if (*sweep || *regress || *calibrate) return run_study();
    return 0;
  } catch (const podsim::UserError& e) {
    std::fflush(stdout);
    fmt::print(stderr, "podsim: {}\n", e.what());
    return podsim::kUserErrorExitCode;
  }
}
