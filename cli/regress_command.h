// `podsim regress`: argument handling; the work is studies/regress.h's.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace podsim::cli {

struct RegressOptions {
  std::string baselines_dir;  // --baselines DIR, empty = reports/baselines (the cwd's, else the
                              // source tree's)
  bool update = false;        // --update
  int jobs = 1;               // -j N
  bool all_rows = false;      // --all: print unchanged metrics too
};

CLI::App* add_regress_command(CLI::App& app, RegressOptions& options);
// Exit 0 when every baseline holds, 1 on a regression (also with --update,
// which rewrites the baselines after reporting).
int run_regress_command(const RegressOptions& options);

}  // namespace podsim::cli
