// `podsim regress` (cli/regress_command.h).
#include "cli/regress_command.h"

#include "studies/regress.h"

namespace podsim::cli {

CLI::App* add_regress_command(CLI::App& app, RegressOptions& o) {
  CLI::App* regress = app.add_subcommand("regress", "compare workloads with tracked baselines");
  regress->add_option(
      "--baselines", o.baselines_dir,
      "baseline folder (default: reports/baselines here, else in the source tree of this podsim)");
  regress->add_flag("--update", o.update, "rewrite the baselines");
  regress->add_option("-j", o.jobs, "workloads run at once")->check(CLI::Range(1, 4096));
  regress->add_flag("--all", o.all_rows, "print unchanged metrics too");
  return regress;
}

int run_regress_command(const RegressOptions& o) {
  studies::RegressRequest request;
  request.baselines_dir = o.baselines_dir;
  request.update = o.update;
  request.jobs = o.jobs;
  request.all_rows = o.all_rows;
  return studies::regress(request);
}

}  // namespace podsim::cli
