// Running gnuplot, the program `podsim sweep --plot` draws with (its script
// is reports/sweep_plot.h's): a child process, so it lives here and not in
// reports/. Also what the plot says about the sweep's base: its title
// (workload and hardware) and, for a calibration config, the measured point.
#pragma once

#include <string>

#include "reports/sweep_plot.h"
#include "studies/sweep_spec.h"

namespace podsim::studies {

// True when a `gnuplot` is on PATH.
bool gnuplot_installed();

// Writes `script` to `script_path` and runs gnuplot on it; the script is
// removed once gnuplot succeeds, kept (for a look) when it fails: false then.
bool run_gnuplot(const std::string& script, const std::string& script_path);

// The plot's axes for a sweep: title "SWEEP: WORKLOAD on HARDWARE, N devices"
// (the base workload with the sweep's `set:`), the first key of each axis,
// and the measured number of `measured_file` (studies/calibration.h) whose
// workload is the sweep's base, when the sweep sets nothing else and every
// swept key is a hardware key (its base value is then the preset's). An
// empty `measured_file`, or a base that does not load, gives no point.
reports::SweepPlotAxes sweep_plot_axes(const SweepSpec& spec, const std::string& measured_file);

// The shipped measured.yaml (studies/regress.h find_baselines_dir), or "".
std::string shipped_measured_file();

}  // namespace podsim::studies
