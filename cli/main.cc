// podsim command line: argument handling only; every command delegates to a
// layer library. User errors (podsim::UserError) print one message and exit 2.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>

#include "cli/commands.h"
#include "common/error.h"

int main(int argc, char** argv) {
  CLI::App app{"podsim: GSPMD-style sharding compiler and TPU pod simulator"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "podsim 0.1.0");
  podsim::cli::Commands commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : podsim::kUserErrorExitCode;
  }
  try {
    return commands.run();
  } catch (const podsim::UserError& e) {
    std::fflush(stdout);
    fmt::print(stderr, "podsim: {}\n", e.what());
    return podsim::kUserErrorExitCode;
  }
}
