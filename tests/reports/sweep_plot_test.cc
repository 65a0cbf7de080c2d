// The gnuplot script of `podsim sweep --plot` (reports/sweep_plot.h): one
// datablock and one titled line per value of the second swept key, values in
// human units with names a person reads, log axes for geometric sweeps, and
// a calibration config's measured point.
#include "reports/sweep_plot.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error.h"

namespace podsim::reports {
namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

SweepPlotAxes two_key_spec() {
  // grid: hardware.ici.link_bandwidth [1e9, 1e10, 1e11] x mesh.axes.x [8, 16]
  return SweepPlotAxes{"link_sweep", {"hardware.ici.link_bandwidth", "mesh.axes.x"}, {}};
}

// The CSV a 3 x 2 grid gives: the second key varies fastest, so a plot of
// column 1 against column 2 in row order would zig-zag 8,16,8,16,...
std::vector<std::vector<std::string>> two_key_table() {
  return {{"point", "hardware.ici.link_bandwidth", "mesh.axes.x", "status", "error", "step_time_s",
           "peak_memory_bytes"},
          {"0", "1e9", "8", "ok", "", "4.0", "100"},
          {"1", "1e9", "16", "ok", "", "3.0", "100"},
          {"2", "1e10", "8", "ok", "", "2.0", "100"},
          {"3", "1e10", "16", "error", "boom", "", ""},
          {"4", "1e11", "8", "ok", "", "1.0", "100"},
          {"5", "1e11", "16", "ok", "", "0.5", "100"}};
}

TEST(SweepPlotTest, OneLinePerSecondKeyValueWithALegend) {
  const std::string s =
      sweep_gnuplot_script(two_key_spec(), two_key_table(), {"step_time_s"}, "out.svg");
  // Two datablocks, two titled lines, no line drawn straight from the CSV.
  EXPECT_EQ(count(s, "<< EOD"), 2u) << s;
  EXPECT_NE(s.find("title 'mesh x = 8'"), std::string::npos) << s;
  EXPECT_NE(s.find("title 'mesh x = 16'"), std::string::npos) << s;
  // mesh x = 8 has three points (x ascending, in GB/s); = 16 two (point 3 failed).
  EXPECT_NE(s.find("$m0s0 << EOD\n1 4\n10 2\n100 1\nEOD"), std::string::npos) << s;
  EXPECT_NE(s.find("$m0s1 << EOD\n1 3\n100 0.5\nEOD"), std::string::npos) << s;
  // The legend in the top right corner, the y range 0.07 higher per entry (+0.03) to hold it.
  EXPECT_NE(s.find("set key inside top right box opaque\nset offsets 0, 0, graph 0.17, 0\n"),
            std::string::npos)
      << s;
}

TEST(SweepPlotTest, LabelsAreLiteralAndCarryHumanUnits) {
  const std::string s =
      sweep_gnuplot_script(two_key_spec(), two_key_table(), {"step_time_s"}, "out.svg");
  EXPECT_NE(s.find("set terminal svg size 900,500 noenhanced"), std::string::npos) << s;
  EXPECT_NE(s.find("set xlabel 'ICI link bandwidth (GB/s)' noenhanced"), std::string::npos) << s;
  EXPECT_NE(s.find("set ylabel 'step time (s)' noenhanced"), std::string::npos) << s;
  EXPECT_NE(s.find("set title 'link_sweep' noenhanced"), std::string::npos) << s;
  EXPECT_EQ(plot_axis_label("tokens_per_s", {}), "tokens_per_s (tokens/s)");
  EXPECT_EQ(plot_axis_label("tokens_per_second", {}), "tokens/s");
  EXPECT_EQ(plot_axis_label("collectives.all-reduce.bytes", {512}),
            "collectives.all-reduce.bytes (bytes)");
  EXPECT_EQ(plot_axis_label("mfu", {0.5}), "MFU (%)");
  EXPECT_EQ(plot_axis_label("some.key", {1}), "some.key");
}

TEST(SweepPlotTest, UnitsFollowTheKeyAndTheSizeOfTheValues) {
  auto unit = [](const std::string& key, std::vector<double> values) {
    const PlotUnit u = plot_unit(key, values);
    return u.unit + " " + std::to_string(u.scale);
  };
  EXPECT_EQ(unit("hardware.hbm.bandwidth", {4.5e11}), "GB/s 1000000000.000000");
  EXPECT_EQ(unit("hardware.ici.link_bytes_per_s", {1}), "GB/s 1000000000.000000");
  // 2^30 bytes = 1 GiB; the largest value picks the prefix.
  EXPECT_EQ(unit("peak_memory_bytes", {1, 7.0 * (1 << 30)}), "GiB 1073741824.000000");
  EXPECT_EQ(unit("memory_breakdown_bytes.gradients", {3.0 * (1 << 20)}), "MiB 1048576.000000");
  EXPECT_EQ(unit("step_time_s", {0.5, 4}), "s 1.000000");
  EXPECT_EQ(unit("time_breakdown_s.compute", {0.002}), "ms 0.001000");
  EXPECT_EQ(unit("step_time_s", {5e-5}), "us 0.000001");
  EXPECT_EQ(unit("mfu", {0.5}), "% 0.010000");
  EXPECT_EQ(unit("flops_utilization.layer_matmuls", {0.5}), "% 0.010000");
  EXPECT_EQ(unit("model.layers", {64}), " 1.000000");
}

TEST(SweepPlotTest, LegendEntriesReadAsValues) {
  EXPECT_EQ(plot_legend_entry("hardware.hbm.bandwidth", "4.5e11", PlotUnit{"GB/s", 1e9}),
            "HBM 450 GB/s");
  EXPECT_EQ(plot_legend_entry("mesh.axes.y", "16", PlotUnit{}), "mesh y = 16");
  EXPECT_EQ(plot_legend_entry("training.remat", "full", PlotUnit{}), "training.remat = full");
}

TEST(SweepPlotTest, GeometricValuesGetALogAxisWithTicsAtTheValues) {
  EXPECT_EQ(log_base({2.05e10, 4.1e10, 8.2e10, 1.64e11, 3.28e11}), 2);  // x2 steps
  EXPECT_EQ(log_base({128, 512, 2048}), 2);                             // x4 = 2^2
  EXPECT_EQ(log_base({1, 10, 100}), 10);                                // x10
  EXPECT_EQ(log_base({1, 3, 9}), 10);                                   // x3: not a power of 2
  EXPECT_EQ(log_base({1, 2, 3}), 0);                                    // arithmetic
  EXPECT_EQ(log_base({1, 100}), 10);                                    // two decades
  EXPECT_EQ(log_base({1, 99}), 0);
  EXPECT_EQ(log_base({0, 1, 2, 4}), 0);  // no log of zero
  EXPECT_EQ(log_base({450, 900}), 0);    // two values are no progression
  const std::string s =
      sweep_gnuplot_script(two_key_spec(), two_key_table(), {"step_time_s"}, "out.svg");
  // x: 1, 10, 100 GB/s -> log 10 with a tic at each; y: 0.5..4 (x2 but not constant) -> linear.
  EXPECT_NE(s.find("set logscale x 10\n"), std::string::npos) << s;
  EXPECT_NE(s.find("set xtics (\"1\" 1, \"10\" 10, \"100\" 100)\n"), std::string::npos) << s;
  EXPECT_NE(s.find("unset logscale y\n"), std::string::npos) << s;
}

// A linear y axis of values that cannot be negative starts at 0 (a 0.1 %
// change stays a flat line); a panel with a negative value keeps gnuplot's
// own range.
TEST(SweepPlotTest, LinearAxesOfNonNegativeValuesStartAtZero) {
  const std::string s =
      sweep_gnuplot_script(two_key_spec(), two_key_table(), {"step_time_s"}, "out.svg");
  EXPECT_NE(s.find("unset logscale y\nset yrange [0:*]\n"), std::string::npos) << s;
  std::vector<std::vector<std::string>> table = two_key_table();
  table[1][5] = "-1.5";  // step_time_s of point 0
  const std::string negative =
      sweep_gnuplot_script(two_key_spec(), table, {"step_time_s"}, "out.svg");
  EXPECT_EQ(negative.find("set yrange [0:*]"), std::string::npos) << negative;
  EXPECT_NE(negative.find("set autoscale y\n"), std::string::npos) << negative;
}

TEST(SweepPlotTest, SeveralMetricsGiveOnePanelEach) {
  const std::string s = sweep_gnuplot_script(two_key_spec(), two_key_table(),
                                             {"step_time_s", "peak_memory_bytes"}, "out.png");
  EXPECT_NE(s.find("set terminal pngcairo size 900,880 noenhanced"), std::string::npos) << s;
  EXPECT_NE(s.find("set multiplot layout 2,1"), std::string::npos) << s;
  EXPECT_EQ(count(s, "\nplot "), 2u) << s;
  EXPECT_NE(s.find("set ylabel 'peak memory per device (bytes)' noenhanced"), std::string::npos)
      << s;
  EXPECT_NE(s.find("unset multiplot"), std::string::npos) << s;
}

TEST(SweepPlotTest, WordValuesOnXBecomeCategories) {
  const SweepPlotAxes spec{"remat", {"training.remat"}, {}};  // grid: training.remat [none, full]
  const std::vector<std::vector<std::string>> table = {
      {"point", "training.remat", "status", "error", "step_time_s"},
      {"0", "none", "ok", "", "1"},
      {"1", "full", "ok", "", "2"}};
  const std::string s = sweep_gnuplot_script(spec, table, {"step_time_s"}, "o.svg");
  EXPECT_NE(s.find("0 1 \"none\"\n1 2 \"full\"\n"), std::string::npos) << s;
  EXPECT_NE(s.find("using 1:2:xticlabels(3)"), std::string::npos) << s;
  EXPECT_NE(s.find("set xlabel 'training.remat' noenhanced"), std::string::npos) << s;
  // Categories a quarter step in from the sides; one legend entry: 0.07 + 0.03 on top.
  EXPECT_NE(s.find("set offsets 0.25, 0.25, graph 0.10, 0\n"), std::string::npos) << s;
}

TEST(SweepPlotTest, MeasuredPointAtTheBaseInEachMetricsTerms) {
  // Base at link 1e10, mesh x 8: step 2.0 s, 16384 tokens a step -> 8192 tokens/s predicted,
  // MFU 0.25. Measured 4096 tokens/s (half): step 16384 / 4096 = 4 s, MFU 0.25 / 2 = 12.5 %.
  SweepPlotAxes axes = two_key_spec();
  axes.measured =
      SweepPlotMeasured{"measured: X (4096 tokens/s)", {"1e10", "8"}, "tokens_per_second", 4096};
  std::vector<std::vector<std::string>> table = two_key_table();
  table[0].insert(table[0].end(), {"tokens_per_second", "mfu"});
  for (size_t r = 1; r < table.size(); ++r) table[r].insert(table[r].end(), {"", ""});
  table[3][7] = "8192";  // point 2: link 1e10, mesh x 8, step 2.0 s
  table[3][8] = "0.25";
  const std::string s = sweep_gnuplot_script(axes, table, {"step_time_s", "mfu"}, "o.svg");
  EXPECT_NE(s.find("$m0measured << EOD\n10 4\nEOD"), std::string::npos) << s;
  EXPECT_NE(s.find("$m1measured << EOD\n10 12.5\nEOD"), std::string::npos) << s;
  EXPECT_NE(s.find("title 'measured: X (4096 tokens/s)'"), std::string::npos) << s;
  // No base row (the base point failed): no measured point.
  table[3][3] = "error";
  EXPECT_EQ(sweep_gnuplot_script(axes, table, {"step_time_s"}, "o.svg").find("measured"),
            std::string::npos);
}

TEST(SweepPlotTest, UnknownMetricNamesTheNearestField) {
  try {
    check_plot_metrics({"step_time"}, {"step_time_s", "mfu"});
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(e.hint().find("did you mean 'step_time_s'?"), std::string::npos) << e.hint();
  }
  EXPECT_NO_THROW(check_plot_metrics({"mfu"}, {"step_time_s", "mfu"}));
}

}  // namespace
}  // namespace podsim::reports
