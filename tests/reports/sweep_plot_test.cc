// The gnuplot script of `podsim sweep --plot` (reports/sweep_plot.h): one
// datablock and one titled line per value of the second swept key, labels
// printed as written (noenhanced), log axes for values spanning decades.
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
  return SweepPlotAxes{"link_sweep", {"hardware.ici.link_bandwidth", "mesh.axes.x"}};
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
  EXPECT_NE(s.find("title 'mesh.axes.x=8'"), std::string::npos) << s;
  EXPECT_NE(s.find("title 'mesh.axes.x=16'"), std::string::npos) << s;
  EXPECT_NE(s.find("set key title 'mesh.axes.x'"), std::string::npos) << s;
  // mesh.axes.x=8 has three points (x ascending); =16 two (point 3 failed).
  EXPECT_NE(s.find("$m0s0 << EOD\n1000000000 4\n10000000000 2\n100000000000 1\nEOD"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("$m0s1 << EOD\n1000000000 3\n100000000000 0.5\nEOD"), std::string::npos) << s;
}

TEST(SweepPlotTest, LabelsAreLiteralAndCarryUnits) {
  const std::string s =
      sweep_gnuplot_script(two_key_spec(), two_key_table(), {"step_time_s"}, "out.svg");
  EXPECT_NE(s.find("set terminal svg size 900,500 noenhanced"), std::string::npos) << s;
  EXPECT_NE(s.find("set xlabel 'hardware.ici.link_bandwidth (bytes/s)' noenhanced"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("set ylabel 'step_time_s (s)' noenhanced"), std::string::npos) << s;
  EXPECT_NE(s.find("set title 'link_sweep' noenhanced"), std::string::npos) << s;
  EXPECT_EQ(plot_axis_label("tokens_per_s"), "tokens_per_s (tokens/s)");
  EXPECT_EQ(plot_axis_label("peak_memory_bytes"), "peak_memory_bytes (bytes)");
  EXPECT_EQ(plot_axis_label("tokens_per_second"), "tokens_per_second (tokens/s)");
  EXPECT_EQ(plot_axis_label("time_breakdown_s.compute"), "time_breakdown_s.compute (s)");
  EXPECT_EQ(plot_axis_label("collectives.all-reduce.bytes"),
            "collectives.all-reduce.bytes (bytes)");
  EXPECT_EQ(plot_axis_label("mfu"), "mfu");
}

TEST(SweepPlotTest, LogAxesWhereValuesSpanTwoDecades) {
  const std::string s =
      sweep_gnuplot_script(two_key_spec(), two_key_table(), {"step_time_s"}, "out.svg");
  // x: 1e9..1e11 (ratio 100) -> log; y: 0.5..4 (ratio 8) -> linear.
  EXPECT_NE(s.find("set logscale x\n"), std::string::npos) << s;
  EXPECT_NE(s.find("unset logscale y\n"), std::string::npos) << s;
  EXPECT_TRUE(spans_decades({1, 100}));
  EXPECT_FALSE(spans_decades({1, 99}));
  EXPECT_FALSE(spans_decades({0, 100}));  // no log of zero
}

TEST(SweepPlotTest, SeveralMetricsGiveOnePanelEach) {
  const std::string s = sweep_gnuplot_script(two_key_spec(), two_key_table(),
                                             {"step_time_s", "peak_memory_bytes"}, "out.png");
  EXPECT_NE(s.find("set terminal pngcairo size 900,880 noenhanced"), std::string::npos) << s;
  EXPECT_NE(s.find("set multiplot layout 2,1"), std::string::npos) << s;
  EXPECT_EQ(count(s, "\nplot "), 2u) << s;
  EXPECT_NE(s.find("set ylabel 'peak_memory_bytes (bytes)' noenhanced"), std::string::npos) << s;
  EXPECT_NE(s.find("unset multiplot"), std::string::npos) << s;
}

TEST(SweepPlotTest, WordValuesOnXBecomeCategories) {
  const SweepPlotAxes spec{"remat", {"training.remat"}};  // grid: training.remat [none, full]
  const std::vector<std::vector<std::string>> table = {
      {"point", "training.remat", "status", "error", "step_time_s"},
      {"0", "none", "ok", "", "1"},
      {"1", "full", "ok", "", "2"}};
  const std::string s = sweep_gnuplot_script(spec, table, {"step_time_s"}, "o.svg");
  EXPECT_NE(s.find("0 1 \"none\"\n1 2 \"full\"\n"), std::string::npos) << s;
  EXPECT_NE(s.find("using 1:2:xticlabels(3)"), std::string::npos) << s;
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
