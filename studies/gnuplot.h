// Running gnuplot, the program `podsim sweep --plot` draws with (its script
// is reports/sweep_plot.h's): a child process, so it lives here and not in
// reports/.
#pragma once

#include <string>

namespace podsim::studies {

// True when a `gnuplot` is on PATH.
bool gnuplot_installed();

// Writes `script` to `script_path` and runs gnuplot on it; the script is
// removed once gnuplot succeeds, kept (for a look) when it fails: false then.
bool run_gnuplot(const std::string& script, const std::string& script_path);

}  // namespace podsim::studies
