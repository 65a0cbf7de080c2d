// Running gnuplot (studies/gnuplot.h) with a stand-in gnuplot on PATH: found
// or not, the script handed over and removed, or kept when gnuplot fails.
// And the plot of each shipped sweep: the script reports/sweep_plot.h writes
// for a table shaped like the sweep's (made-up numbers), with the title and
// measured point sweep_plot_axes gives, checked for its units, log axes,
// legend entries and title.
#include "studies/gnuplot.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "common/files.h"
#include "driver/child_process.h"
#include "reports/sweep_plot.h"
#include "studies/sweep_spec.h"

namespace podsim::studies {
namespace {

namespace fs = std::filesystem;

// Sets PATH for the test's lifetime.
class PathIs {
 public:
  explicit PathIs(const std::string& path) : old_(std::getenv("PATH") ? std::getenv("PATH") : "") {
    setenv("PATH", path.c_str(), 1);
  }
  ~PathIs() { setenv("PATH", old_.c_str(), 1); }

 private:
  std::string old_;
};

TEST(Gnuplot, FoundOnPathAndHandedTheScript) {
  const driver::ScratchDir scratch("podsim-test-gnuplot", "the test");
  const fs::path bin = scratch.path() / "bin";
  fs::create_directories(bin);
  // Keeps the script it is given; fails when the script says "fail".
  write_file_atomically((bin / "gnuplot").string(),
                        "#!/bin/sh\ncp \"$1\" \"" + (scratch.path() / "seen.gp").string() +
                            "\"\ngrep -q fail \"$1\" && exit 1\nexit 0\n");
  fs::permissions(bin / "gnuplot", fs::perms::owner_all);
  {
    const PathIs path("/nonexistent");
    EXPECT_FALSE(gnuplot_installed());
  }
  const PathIs path(bin.string() + ":/usr/bin:/bin");
  EXPECT_TRUE(gnuplot_installed());
  const fs::path script = scratch.path() / "p.svg.gp";
  EXPECT_TRUE(run_gnuplot("plot x\n", script.string()));
  EXPECT_EQ(read_text_file(scratch.path() / "seen.gp"), "plot x\n");
  EXPECT_FALSE(fs::exists(script));  // removed once drawn
  EXPECT_FALSE(run_gnuplot("fail\n", script.string()));
  EXPECT_EQ(read_text_file(script), "fail\n");  // kept for a look
}

// A results table shaped like the sweep's CSV: point i takes 1 + i seconds a
// step of 16384 tokens, MFU 0.5 / step time, 8 GiB of memory.
std::vector<std::vector<std::string>> made_up_table(const SweepSpec& spec) {
  std::vector<std::string> header = {"point"};
  for (const std::string& key : spec.swept_keys()) header.push_back(key);
  for (const char* c :
       {"status", "error", "step_time_s", "tokens_per_second", "mfu", "peak_memory_bytes"})
    header.push_back(c);
  std::vector<std::vector<std::string>> table = {header};
  for (const SweepPoint& p : expand_sweep(spec)) {
    const double step = 1.0 + static_cast<double>(p.index);
    std::vector<std::string> row = {std::to_string(p.index)};
    for (const auto& [key, value] : p.values) row.push_back(value);
    for (const std::string& v : {std::string("ok"), std::string(), fmt::format("{}", step),
                                 fmt::format("{}", 16384 / step), fmt::format("{}", 0.5 / step),
                                 std::string("8589934592")})
      row.push_back(v);
    table.push_back(row);
  }
  return table;
}

// The (x, y) of panel `m`'s measured point, or none.
std::optional<std::pair<double, double>> measured_point(const std::string& script, int m) {
  const std::string head = fmt::format("$m{}measured << EOD\n", m);
  const size_t at = script.find(head);
  if (at == std::string::npos) return std::nullopt;
  std::istringstream in(script.substr(at + head.size()));
  double x = 0, y = 0;
  in >> x >> y;
  return std::pair{x, y};
}

TEST(Gnuplot, ShippedSweepsPlotInHumanUnitsWithTitlesAndMeasuredPoints) {
  const std::string measured = std::string(PODSIM_SOURCE_DIR) + "/reports/baselines/measured.yaml";
  // What each shipped sweep's x axis must read, and its log base.
  struct Expected {
    std::string xlabel;
    std::string logscale;  // "" = linear (categories)
    std::string title;
  };
  const std::map<std::string, Expected> expected = {
      {"what_if_128b.yaml",
       {"ICI link bandwidth (GB/s)", "set logscale x 2",
        "what-if-128b: dense-128b-8x8 on tpuv3, 128 devices"}},
      {"ici_bandwidth_1t.yaml",
       {"ICI link bandwidth (GB/s)", "set logscale x 2",
        "ici-bandwidth-1t: dense-1t-2048 on tpuv3, 2048 devices"}},
      {"moe_experts.yaml", {"experts", "set logscale x 2", "moe-experts-128-2048: "}},
      {"mesh_shape_128b_512.yaml",
       {"mesh x", "set logscale x 2",
        "mesh-shape-128b-512: dense-128b-16x16 on tpuv3, 512 devices"}},
      {"windowed_einsum_128b.yaml", {"overlap test", "", "windowed-einsum-128b: "}},
      // The base is two slices of 256: the title counts every slice's devices.
      {"slices_16b_v5e.yaml",
       {"slices (data parallel over DCN)", "set logscale x 2",
        "slices-16b-v5e: maxtext-16b-v5e-2x256 on tpuv5e, 512 devices"}},
  };
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(std::string(PODSIM_SOURCE_DIR) + "/sweeps")) {
    if (entry.path().extension() != ".yaml") continue;
    const std::string name = entry.path().filename().string();
    const SweepSpec spec = load_sweep(entry.path().string());
    const reports::SweepPlotAxes axes = sweep_plot_axes(spec, measured);
    const std::string s = reports::sweep_gnuplot_script(
        axes, made_up_table(spec), {"step_time_s", "mfu", "peak_memory_bytes"}, "p.svg");
    // Every shipped sweep: the title names workload and hardware; MFU in %, memory in GiB.
    EXPECT_NE(axes.title.find(" on "), std::string::npos) << name << ": " << axes.title;
    EXPECT_NE(s.find("set ylabel 'step time (s)'"), std::string::npos) << name << s;
    EXPECT_NE(s.find("set ylabel 'MFU (%)'"), std::string::npos) << name << s;
    EXPECT_NE(s.find("set ylabel 'peak memory per device (GiB)'"), std::string::npos) << name;
    // Made-up values are all positive: every linear panel starts at 0.
    EXPECT_NE(s.find("set yrange [0:*]\n"), std::string::npos) << name << s;
    const auto it = expected.find(name);
    if (it == expected.end()) continue;  // a sweep added since: the checks above only
    ++checked;
    EXPECT_EQ(axes.title.rfind(it->second.title, 0), 0u) << name << ": " << axes.title;
    EXPECT_NE(s.find("set xlabel '" + it->second.xlabel + "'"), std::string::npos) << name << s;
    if (!it->second.logscale.empty())
      EXPECT_NE(s.find(it->second.logscale + "\n"), std::string::npos) << name << s;
    else
      EXPECT_NE(s.find("unset logscale x\n"), std::string::npos) << name << s;
    // No raw key names a line.
    for (const std::string& key : spec.swept_keys())
      EXPECT_EQ(s.find("title '" + key), std::string::npos) << name << ": " << key;
    if (name != "what_if_128b.yaml") {
      EXPECT_FALSE(axes.measured) << name;  // not a calibration config as measured
      continue;
    }
    // README's plot: tics at the swept rates, one line per HBM bandwidth.
    EXPECT_NE(s.find("set xtics (\"20.5\" 20.5, \"41\" 41, \"82\" 82, \"164\" 164, \"328\" 328)"),
              std::string::npos)
        << s;
    EXPECT_NE(s.find("title 'HBM 450 GB/s'"), std::string::npos) << s;
    EXPECT_NE(s.find("title 'HBM 900 GB/s'"), std::string::npos) << s;
    // DenseLm128B8x8's measured 3700 tokens/s at the preset (82 GB/s links, 450 GB/s HBM),
    // the base row: point 4 (third link rate, first HBM bandwidth: 2 x 2 + 0), 5 s a step,
    // 16384 / 5 tokens/s, MFU 0.1. Measured: 16384 / 3700 s a step; MFU 0.1 x 3700 / 3276.8.
    ASSERT_TRUE(axes.measured);
    EXPECT_NE(s.find("title 'measured: DenseLm128B8x8 (3700 tokens/s)'"), std::string::npos) << s;
    const auto step = measured_point(s, 0), mfu = measured_point(s, 1);
    ASSERT_TRUE(step && mfu) << s;
    EXPECT_DOUBLE_EQ(step->first, 82);
    EXPECT_NEAR(step->second, 16384.0 / 3700, 1e-9);
    EXPECT_NEAR(mfu->second, 100 * 0.1 * 3700 / 3276.8, 1e-9);
    EXPECT_FALSE(measured_point(s, 2)) << "memory has no measured number";
  }
  EXPECT_EQ(checked, static_cast<int>(expected.size()));
}

}  // namespace
}  // namespace podsim::studies
