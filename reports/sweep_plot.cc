// The gnuplot script behind `podsim sweep --plot` (see sweep_plot.h). The
// data go into the script as datablocks (one per line of a panel), already
// in the units the axes name, so the script alone reproduces the plot.
#include "reports/sweep_plot.h"

#include <algorithm>
#include <charconv>
#include <cmath>
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

// A value as shown on a tic or in a legend: four significant digits.
std::string shown(double value) { return fmt::format("{:.4g}", value); }

// Names of the keys the shipped sweeps and README plot; any other key is
// shown as written.
struct KeyName {
  const char* key;
  const char* name;
};
constexpr KeyName kKeyNames[] = {
    {"hardware.ici.link_bandwidth", "ICI link bandwidth"},
    {"hardware.hbm.bandwidth", "HBM bandwidth"},
    {"step_time_s", "step time"},
    {"mfu", "MFU"},
    {"hfu", "HFU"},
    {"tokens_per_second", "tokens/s"},
    {"peak_memory_bytes", "peak memory per device"},
    {"time_breakdown_s.exposed_communication", "exposed communication"},
    {"model.experts", "experts"},
    {"mesh.axes.x", "mesh x"},
    {"mesh.axes.y", "mesh y"},
    {"mesh.dcn.data", "slices (data parallel over DCN)"},
    {"compiler.windowed_einsum.threshold_mib", "windowed-einsum threshold"},
    {"compiler.windowed_einsum.overlap_test", "overlap test"},
};

// The largest |value|, 0 for none.
double largest(const std::vector<double>& values) {
  double m = 0;
  for (double v : values) m = std::max(m, std::abs(v));
  return m;
}

struct Point {
  double x = 0;
  std::string x_text;
  double y = 0;
};

// The row whose swept values are the base workload's (numbers compared as
// numbers: "8.2e10" is "82000000000"), or null.
const std::vector<std::string>* base_row(const std::vector<std::vector<std::string>>& table,
                                         const std::vector<std::string>& keys,
                                         const SweepPlotMeasured& measured) {
  if (measured.base_values.size() != keys.size()) return nullptr;
  const int status = column(table[0], "status");
  for (size_t r = 1; r < table.size(); ++r) {
    const std::vector<std::string>& row = table[r];
    if (status >= 0 && (status >= static_cast<int>(row.size()) || row[status] != "ok")) continue;
    bool same = true;
    for (size_t k = 0; k < keys.size() && same; ++k) {
      const int c = column(table[0], keys[k]);
      if (c < 0 || c >= static_cast<int>(row.size())) return nullptr;
      const std::optional<double> a = number(row[c]), b = number(measured.base_values[k]);
      same = a && b ? std::abs(*a - *b) <= 1e-9 * std::max(std::abs(*a), std::abs(*b))
                    : row[c] == measured.base_values[k];
    }
    if (same) return &row;
  }
  return nullptr;
}

// The measured number in `metric`'s terms, from the base row: the run does
// the base's work per step, so throughput-like fields (tokens/s, MFU, HFU)
// scale with measured / predicted throughput and the step time inversely.
std::optional<double> measured_in(const std::string& metric, const std::vector<std::string>& header,
                                  const std::vector<std::string>& row,
                                  const SweepPlotMeasured& measured) {
  auto field = [&](const std::string& name) -> std::optional<double> {
    const int c = column(header, name);
    return c >= 0 && c < static_cast<int>(row.size()) ? number(row[c]) : std::nullopt;
  };
  if (metric == measured.metric) return measured.value;
  const std::optional<double> step = field("step_time_s");
  const std::optional<double> predicted = measured.metric == "steps_per_second" && step && *step > 0
                                              ? std::optional(1 / *step)
                                              : field(measured.metric);
  const std::optional<double> value = field(metric);
  if (!predicted || *predicted <= 0 || !value) return std::nullopt;
  const double ratio = measured.value / *predicted;  // measured / predicted throughput
  if (metric == "step_time_s") return *value / ratio;
  if (metric == "tokens_per_second" || metric == "mfu" || metric == "hfu") return *value * ratio;
  return std::nullopt;
}

}  // namespace

int log_base(const std::vector<double>& values) {
  std::vector<double> v = values;
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  if (v.empty() || v.front() <= 0) return 0;
  if (v.size() >= 3) {
    const double factor = v[1] / v[0];
    bool constant = factor > 1.01;
    for (size_t i = 2; i < v.size() && constant; ++i)
      constant = std::abs(v[i] / v[i - 1] / factor - 1) < 0.01;
    if (constant) {
      const double power = std::log2(factor);
      return std::abs(power - std::round(power)) < 0.01 ? 2 : 10;
    }
  }
  return v.back() / v.front() >= 100 ? 10 : 0;
}

PlotUnit plot_unit(const std::string& key, const std::vector<double>& values) {
  // A grouped report field carries its unit on the group:
  // "time_breakdown_s.compute", "memory_breakdown_bytes.gradients".
  const size_t dot = key.rfind('.');
  const std::string last = key.substr(dot == std::string::npos ? 0 : dot + 1);
  const std::string group = dot == std::string::npos ? "" : key.substr(0, dot);
  auto ends = [&](const char* suffix) { return last.ends_with(suffix); };
  const double big = largest(values);
  auto bytes = [&]() {
    if (big >= 1 << 30) return PlotUnit{"GiB", 1 << 30};
    if (big >= 1 << 20) return PlotUnit{"MiB", 1 << 20};
    if (big >= 1 << 10) return PlotUnit{"KiB", 1 << 10};
    return PlotUnit{"bytes", 1};
  };
  auto seconds = [&]() {
    if (big >= 1 || big == 0) return PlotUnit{"s", 1};
    if (big >= 1e-3) return PlotUnit{"ms", 1e-3};
    return PlotUnit{"us", 1e-6};
  };
  if (last == "mfu" || last == "hfu" || group == "flops_utilization" || ends("_fraction") ||
      ends("_efficiency"))
    return PlotUnit{"%", 0.01};
  if (ends("_bytes_per_s") || ends("bandwidth")) return PlotUnit{"GB/s", 1e9};
  if (ends("_per_s") || ends("_per_second")) {
    const std::string stem = last.substr(0, last.rfind("_per_s"));
    const size_t us = stem.find_last_of('_');
    return PlotUnit{stem.substr(us == std::string::npos ? 0 : us + 1) + "/s", 1};
  }
  if (ends("_hz")) return big >= 1e9 ? PlotUnit{"GHz", 1e9} : PlotUnit{"Hz", 1};
  if (ends("_bytes") || last == "bytes") return bytes();
  if (ends("_mib")) return PlotUnit{"MiB", 1};
  if (ends("_ms")) return PlotUnit{"ms", 1};
  if (ends("_s") || last == "seconds") return seconds();
  if (ends("_pct") || ends("_percent")) return PlotUnit{"%", 1};
  if (group.ends_with("_bytes")) return bytes();
  if (group.ends_with("_s")) return seconds();
  return PlotUnit{};
}

std::string plot_name(const std::string& key) {
  for (const KeyName& k : kKeyNames)
    if (key == k.key) return k.name;
  return key;
}

std::string plot_axis_label(const std::string& key, const std::vector<double>& values) {
  const PlotUnit unit = plot_unit(key, values);
  const std::string name = plot_name(key);
  // "tokens/s" is its own unit.
  return unit.unit.empty() || name == unit.unit ? name : fmt::format("{} ({})", name, unit.unit);
}

std::string plot_legend_entry(const std::string& key, const std::string& value,
                              const PlotUnit& unit) {
  std::string name = plot_name(key);
  const std::optional<double> x = number(value);
  if (!x || unit.unit.empty()) return fmt::format("{} = {}", name, value);
  // A bandwidth's value says it is one: "HBM 450 GB/s".
  if (name.ends_with(" bandwidth")) name.resize(name.size() - std::string(" bandwidth").size());
  return fmt::format("{} {} {}", name, shown(*x / unit.scale), unit.unit);
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
  const int log_x = numeric_x ? log_base(xs) : 0;
  const PlotUnit x_unit = numeric_x ? plot_unit(x_key, xs) : PlotUnit{};
  // Each series key's unit, from all its values.
  std::vector<PlotUnit> series_units;
  for (const std::string& k : series_keys) {
    std::vector<double> values;
    const int c = column(header, k);
    for (size_t r = 1; r < table.size(); ++r)
      if (c >= 0 && c < static_cast<int>(table[r].size()))
        if (const std::optional<double> v = number(table[r][c])) values.push_back(*v);
    series_units.push_back(plot_unit(k, values));
  }
  const std::vector<std::string>* measured_row =
      axes.measured ? base_row(table, axes.axis_keys, *axes.measured) : nullptr;

  const size_t panels = std::max<size_t>(1, metrics.size());
  const int height = static_cast<int>(120 + 380 * panels);
  const std::string terminal = plot_path.ends_with(".png") ? "pngcairo" : "svg";
  std::string s;
  s += fmt::format("set terminal {} size 900,{} noenhanced\n", terminal, height);
  s += fmt::format("set output {}\n", quoted(plot_path));
  s += "set grid\n";
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
      for (size_t k = 0; k < series_keys.size(); ++k)
        parts.push_back(plot_legend_entry(series_keys[k], cell(column(header, series_keys[k])),
                                          series_units[k]));
      const std::string label =
          series_keys.empty() ? plot_name(metric) : fmt::format("{}", fmt::join(parts, ", "));
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
    std::optional<Point> measured;
    if (measured_row && numeric_x)
      if (const std::optional<double> y =
              measured_in(metric, header, *measured_row, *axes.measured))
        measured = Point{*number((*measured_row)[x_col]), "", *y};
    if (measured) ys.push_back(measured->y);
    const int log_y = log_base(ys) == 0 ? 0 : 10;
    const PlotUnit y_unit = plot_unit(metric, ys);
    const std::string block = fmt::format("$m{}s", m);
    for (size_t i = 0; i < series.size(); ++i) {
      std::vector<Point>& points = series[i].second;
      std::stable_sort(points.begin(), points.end(),
                       [](const Point& a, const Point& b) { return a.x < b.x; });
      s += fmt::format("{}{} << EOD\n", block, i);
      for (const Point& p : points)
        s += numeric_x ? fmt::format("{:.17g} {:.17g}\n", p.x / x_unit.scale, p.y / y_unit.scale)
                       : fmt::format("{:.17g} {:.17g} \"{}\"\n", p.x, p.y / y_unit.scale, p.x_text);
      s += "EOD\n";
    }
    if (measured)
      s += fmt::format("$m{}measured << EOD\n{:.17g} {:.17g}\nEOD\n", m, measured->x / x_unit.scale,
                       measured->y / y_unit.scale);
    if (panels == 1) s += fmt::format("set title {} noenhanced\n", quoted(axes.title));
    s += fmt::format("set xlabel {} noenhanced\n",
                     quoted(numeric_x ? plot_axis_label(x_key, xs) : plot_name(x_key)));
    s += fmt::format("set ylabel {} noenhanced\n", quoted(plot_axis_label(metric, ys)));
    s += log_x ? fmt::format("set logscale x {}\n", log_x) : "unset logscale x\n";
    s += log_y ? fmt::format("set logscale y {}\n", log_y) : "unset logscale y\n";
    // A linear axis of a quantity that cannot be negative starts at 0, so a
    // change of 0.1 % does not fill the panel as if it were a factor.
    const bool from_zero = !log_y && !ys.empty() && *std::min_element(ys.begin(), ys.end()) >= 0;
    s += from_zero ? "set yrange [0:*]\n" : "set autoscale y\n";
    // A geometric sweep's tics are its values (a log axis's own fall between
    // them), its range the values and 5 % of their log span on either side.
    if (log_x) {
      std::vector<std::string> tics;
      for (double x : xs)
        tics.push_back(fmt::format("\"{}\" {:.17g}", shown(x / x_unit.scale), x / x_unit.scale));
      s += fmt::format("set xtics ({})\n", fmt::join(tics, ", "));
      const auto [lo, hi] = std::minmax_element(xs.begin(), xs.end());
      const double margin = std::pow(*hi / *lo, 0.05);
      s += fmt::format("set xrange [{:.6g}:{:.6g}]\n", *lo / x_unit.scale / margin,
                       *hi / x_unit.scale * margin);
    } else {
      s += "set xtics autofreq\nset autoscale x\n";
    }
    if (series.empty()) {
      s += fmt::format(
          "set label 1 {} at graph 0.5,0.5 center noenhanced\nplot NaN notitle\nunset label 1\n",
          quoted("no successful point has " + metric));
      continue;
    }
    // The legend inside the panel's top right corner (the page's width stays
    // the plot's), above the data: the y range gets about a legend row's
    // height (7 % of the panel) per entry on top, at most 60 %. Categories sit a quarter
    // step in from the sides.
    const size_t key_rows = series.size() + (measured ? 1 : 0);
    s += "set key inside top right box opaque\n";
    s += fmt::format("set offsets {0}, {0}, graph {1:.2f}, 0\n", numeric_x ? "0" : "0.25",
                     std::min(0.6, 0.07 * static_cast<double>(key_rows) + 0.03));
    std::vector<std::string> plots;
    for (size_t i = 0; i < series.size(); ++i)
      plots.push_back(
          fmt::format("{}{} using 1:2{} with linespoints linewidth 2 title {} noenhanced", block, i,
                      numeric_x ? "" : ":xticlabels(3)", quoted(series[i].first)));
    if (measured)
      plots.push_back(fmt::format(
          "$m{}measured using 1:2 with points pointtype 7 pointsize 1.6 lc rgb 'black' title {} "
          "noenhanced",
          m, quoted(axes.measured->label)));
    s += fmt::format("plot {}\n", fmt::join(plots, ", \\\n     "));
  }
  if (panels > 1) s += "unset multiplot\n";
  return s;
}

}  // namespace podsim::reports
