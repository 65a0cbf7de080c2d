// `podsim sweep --plot`: the gnuplot script that draws a sweep's results
// table. One panel per metric (any report field), the first swept key on x,
// one line per combination of the other swept keys' values (named in the
// legend); an axis is logarithmic when its values span two decades or more;
// labels are printed as written (no '_' subscripts) and carry units.
#pragma once

#include <string>
#include <vector>

namespace podsim::reports {

// What the plot draws against: the sweep's name (the title) and the first
// key of each grid axis in axis order (x, then one series per other axis).
struct SweepPlotAxes {
  std::string title;
  std::vector<std::string> axis_keys;
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

// An axis label: the name as written plus its unit from the suffix
// ("step_time_s" -> "step_time_s (s)", "hardware.ici.link_bandwidth" ->
// "hardware.ici.link_bandwidth (bytes/s)").
std::string plot_axis_label(const std::string& name);

// True when every value is a positive number and max/min >= 100.
bool spans_decades(const std::vector<double>& values);

}  // namespace podsim::reports
