// `podsim sweep --plot`: the gnuplot script that draws a sweep's results
// table. One panel per metric (any report field), the first swept key on x,
// one line per combination of the other swept keys' values. Values are drawn
// in human units chosen from the key (B/s -> GB/s, bytes -> GiB/MiB/KiB,
// seconds -> s/ms/us, fractions such as mfu -> %), names as a person says
// them ("HBM bandwidth", legend "HBM 450 GB/s"), a geometric sweep on a log
// axis (base 2 when the values double) with a tic at each swept value, and
// a calibration config's measured number as a point of its own.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace podsim::reports {

// A calibration config's measured number (studies/calibration.h), drawn at
// the base workload's values of the swept keys.
struct SweepPlotMeasured {
  std::string label;                     // the legend entry
  std::vector<std::string> base_values;  // the base's value of each axis key
  std::string metric;                    // tokens_per_second | steps_per_second | mfu
  double value = 0;
};

// What the plot draws against: the title (sweep, workload and hardware), the
// first key of each grid axis in axis order (x, then one series per other
// axis), and the measured point when the base is a calibration config.
struct SweepPlotAxes {
  std::string title;
  std::vector<std::string> axis_keys;
  std::optional<SweepPlotMeasured> measured;
};

// `table`: the sweep CSV parsed (header row first). Rows with status other
// than ok, or without a number in a metric, are left out of that panel.
std::string sweep_gnuplot_script(const SweepPlotAxes& axes,
                                 const std::vector<std::vector<std::string>>& table,
                                 const std::vector<std::string>& metrics,
                                 const std::string& plot_path);

// UserError (with the nearest valid name) for a --plot-metric that is no
// report field; run before the sweep starts.
void check_plot_metrics(const std::vector<std::string>& metrics,
                        const std::vector<std::string>& report_fields);

// How a key's values are shown: value / scale, in `unit` ("" = a plain
// number). Chosen from the key's suffix (or its group's:
// "time_breakdown_s.compute") and the size of the values.
struct PlotUnit {
  std::string unit;
  double scale = 1;
};
PlotUnit plot_unit(const std::string& key, const std::vector<double>& values);

// The name a person reads: "hardware.hbm.bandwidth" -> "HBM bandwidth",
// "step_time_s" -> "step time"; a key without one is shown as written.
std::string plot_name(const std::string& key);

// An axis label: the name and its unit, "HBM bandwidth (GB/s)".
std::string plot_axis_label(const std::string& key, const std::vector<double>& values);

// A legend entry for one value of a series key: "HBM 450 GB/s" (a
// bandwidth's short name), "mesh y = 16" (no unit), "remat = full" (a word).
std::string plot_legend_entry(const std::string& key, const std::string& value,
                              const PlotUnit& unit);

// The log base of an axis over these values: 0 = linear; 2 when the sorted
// distinct values (three or more, all positive) go up by one constant
// factor that is a power of two; 10 for another constant factor, or when
// they span two decades or more.
int log_base(const std::vector<double>& values);

}  // namespace podsim::reports
