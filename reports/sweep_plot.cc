// The gnuplot script behind `podsim sweep --plot` (see sweep_plot.h). The
// data go into the script as datablocks (one per line of a panel), so the
// script alone reproduces the plot.
#include "reports/sweep_plot.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/did_you_mean.h"
#include "common/error.h"

namespace podsim::reports {
namespace {

std::optional<double> number(const std::string& text) {
  double value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty()) return std::nullopt;
  return value;
}

// A gnuplot single-quoted string ('' stands for ').
std::string quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// The index of `name` in the header, or -1.
int column(const std::vector<std::string>& header, const std::string& name) {
  auto it = std::find(header.begin(), header.end(), name);
  return it == header.end() ? -1 : static_cast<int>(it - header.begin());
}

struct Point {
  double x = 0;
  std::string x_text;
  double y = 0;
};

}  // namespace

bool spans_decades(const std::vector<double>& values) {
  if (values.empty()) return false;
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  return *lo > 0 && *hi / *lo >= 100;
}

std::string plot_axis_label(const std::string& name) {
  // A grouped report field carries its unit on the group:
  // "time_breakdown_s.compute", "memory_breakdown_bytes.gradients".
  const size_t dot = name.rfind('.');
  const std::string last = name.substr(dot == std::string::npos ? 0 : dot + 1);
  const std::string group = dot == std::string::npos ? "" : name.substr(0, dot);
  auto ends = [&](const char* suffix) { return last.ends_with(suffix); };
  std::string unit;
  if (ends("_bytes_per_s") || ends("bandwidth"))
    unit = "bytes/s";
  else if (ends("_per_s") || ends("_per_second")) {
    const std::string stem = last.substr(0, last.rfind("_per_s"));
    unit =
        stem.substr(stem.find_last_of('_') == std::string::npos ? 0 : stem.find_last_of('_') + 1) +
        "/s";
  } else if (ends("_hz"))
    unit = "Hz";
  else if (ends("_bytes") || last == "bytes")
    unit = "bytes";
  else if (ends("_ms"))
    unit = "ms";
  else if (ends("_s") || last == "seconds")
    unit = "s";
  else if (ends("_pct") || ends("_percent"))
    unit = "%";
  else if (group.ends_with("_bytes"))
    unit = "bytes";
  else if (group.ends_with("_s"))
    unit = "s";
  return unit.empty() ? name : fmt::format("{} ({})", name, unit);
}

void check_plot_metrics(const std::vector<std::string>& metrics,
                        const std::vector<std::string>& report_fields) {
  for (const std::string& metric : metrics) {
    if (std::find(report_fields.begin(), report_fields.end(), metric) != report_fields.end())
      continue;
    const std::string guess = closest(metric, report_fields);
    throw UserError(SourceLocation{"--plot-metric " + metric, 0, 0},
                    fmt::format("'{}' is not a report field", metric),
                    guess.empty()
                        ? "the CSV header of `podsim run W.yaml --format csv` lists the fields"
                        : fmt::format("did you mean '{}'?", guess));
  }
}

std::string sweep_gnuplot_script(const SweepPlotAxes& axes,
                                 const std::vector<std::vector<std::string>>& table,
                                 const std::vector<std::string>& metrics,
                                 const std::string& plot_path) {
  if (axes.axis_keys.empty() || table.empty()) return "";
  const std::vector<std::string>& header = table[0];
  const std::string x_key = axes.axis_keys[0];
  // The series keys: one per further axis (a zipped axis's keys move together).
  const std::vector<std::string> series_keys(axes.axis_keys.begin() + 1, axes.axis_keys.end());
  const int x_col = column(header, x_key), status_col = column(header, "status");

  // x: numbers when every value is one, else categories in grid order.
  std::vector<std::string> categories;
  bool numeric_x = true;
  for (size_t r = 1; r < table.size(); ++r) {
    if (x_col < 0 || x_col >= static_cast<int>(table[r].size())) continue;
    const std::string& v = table[r][x_col];
    if (!number(v)) numeric_x = false;
    if (std::find(categories.begin(), categories.end(), v) == categories.end())
      categories.push_back(v);
  }
  std::vector<double> xs;
  if (numeric_x)
    for (const std::string& c : categories) xs.push_back(*number(c));
  const bool log_x = numeric_x && spans_decades(xs);

  const size_t panels = std::max<size_t>(1, metrics.size());
  const int height = static_cast<int>(120 + 380 * panels);
  const std::string terminal = plot_path.ends_with(".png") ? "pngcairo" : "svg";
  std::string s;
  s += fmt::format("set terminal {} size 900,{} noenhanced\n", terminal, height);
  s += fmt::format("set output {}\n", quoted(plot_path));
  s += "set grid\nset key outside right top box\n";
  if (panels > 1)
    s += fmt::format("set multiplot layout {},1 title {} noenhanced\n", panels, quoted(axes.title));
  for (size_t m = 0; m < metrics.size(); ++m) {
    const std::string& metric = metrics[m];
    const int y_col = column(header, metric);
    // series label -> points, in first-seen order
    std::vector<std::pair<std::string, std::vector<Point>>> series;
    std::vector<double> ys;
    for (size_t r = 1; r < table.size(); ++r) {
      const std::vector<std::string>& row = table[r];
      auto cell = [&](int c) {
        return c >= 0 && c < static_cast<int>(row.size()) ? row[c] : std::string();
      };
      if (status_col >= 0 && cell(status_col) != "ok") continue;
      const std::optional<double> y = number(cell(y_col));
      if (!y || x_col < 0) continue;
      std::vector<std::string> parts;
      for (const std::string& k : series_keys) parts.push_back(k + "=" + cell(column(header, k)));
      const std::string label =
          series_keys.empty() ? metric : fmt::format("{}", fmt::join(parts, ", "));
      auto it = std::find_if(series.begin(), series.end(),
                             [&](const auto& e) { return e.first == label; });
      if (it == series.end()) it = series.insert(series.end(), {label, {}});
      const std::string xt = cell(x_col);
      const double x =
          numeric_x ? *number(xt)
                    : static_cast<double>(std::find(categories.begin(), categories.end(), xt) -
                                          categories.begin());
      it->second.push_back(Point{x, xt, *y});
      ys.push_back(*y);
    }
    const bool log_y = spans_decades(ys);
    const std::string block = fmt::format("$m{}s", m);
    for (size_t i = 0; i < series.size(); ++i) {
      std::vector<Point>& points = series[i].second;
      std::stable_sort(points.begin(), points.end(),
                       [](const Point& a, const Point& b) { return a.x < b.x; });
      s += fmt::format("{}{} << EOD\n", block, i);
      for (const Point& p : points)
        s += numeric_x ? fmt::format("{:.17g} {:.17g}\n", p.x, p.y)
                       : fmt::format("{:.17g} {:.17g} \"{}\"\n", p.x, p.y, p.x_text);
      s += "EOD\n";
    }
    if (panels == 1) s += fmt::format("set title {} noenhanced\n", quoted(axes.title));
    s += fmt::format("set xlabel {} noenhanced\n", quoted(plot_axis_label(x_key)));
    s += fmt::format("set ylabel {} noenhanced\n", quoted(plot_axis_label(metric)));
    s += log_x ? "set logscale x\n" : "unset logscale x\n";
    s += log_y ? "set logscale y\n" : "unset logscale y\n";
    if (!series_keys.empty())
      s += fmt::format("set key title {} noenhanced\n",
                       quoted(fmt::format("{}", fmt::join(series_keys, ", "))));
    if (series.empty()) {
      s += fmt::format(
          "set label 1 {} at graph 0.5,0.5 center noenhanced\nplot NaN notitle\nunset label 1\n",
          quoted("no successful point has " + metric));
      continue;
    }
    std::vector<std::string> plots;
    for (size_t i = 0; i < series.size(); ++i)
      plots.push_back(fmt::format("{}{} using 1:2{} with linespoints title {} noenhanced", block, i,
                                  numeric_x ? "" : ":xticlabels(3)", quoted(series[i].first)));
    s += fmt::format("plot {}\n", fmt::join(plots, ", \\\n     "));
  }
  if (panels > 1) s += "unset multiplot\n";
  return s;
}

}  // namespace podsim::reports
