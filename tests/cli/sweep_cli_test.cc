// Sweeps, regressions and crash isolation with real `podsim run` children
// (studies/job_runner.h, studies/sweep.h, studies/regress.h), using the built podsim
// binary: a failing or crashing point becomes an error row; regress on a
// copy of the shipped baselines passes, and detects a deliberate change.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>

#include "common/csv.h"
#include "common/files.h"
#include "reports/flat_report.h"
#include "studies/calibration.h"
#include "studies/job_runner.h"
#include "studies/regress.h"
#include "studies/sweep.h"
#include "tests/cli/cli_test_util.h"

namespace podsim::studies {
namespace {

namespace fs = std::filesystem;
using driver::JobOutcome;
using podsim::cli_test::fresh_dir;
using reports::report_columns;

const std::string kSmall = std::string(PODSIM_SOURCE_DIR) + "/workloads/small.yaml";

ChildRunOptions children(int jobs = 1) {
  ChildRunOptions o;
  o.podsim_binary = PODSIM_BINARY;
  o.jobs = jobs;
  return o;
}

void write_text(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

std::optional<std::string> field(const JobOutcome& o, const std::string& name) {
  return o.metrics.text(name);
}

TEST(SweepCliTest, ChildRunsGiveTheReportFieldsAndFailuresBecomeErrors) {
  std::vector<RunJob> jobs = {
      RunJob{kSmall, {}, "fast"},
      RunJob{kSmall, {"model.layerz=3"}, "fast"},  // a user error in the child
      RunJob{"/nonexistent/w.yaml", {}, "fast"}};
  std::vector<JobOutcome> out = run_jobs(jobs, children(2));
  ASSERT_EQ(out.size(), 3u);
  ASSERT_TRUE(out[0].ok) << out[0].error;
  ASSERT_TRUE(field(out[0], "workload").has_value());
  EXPECT_EQ(*field(out[0], "workload"), "small");
  EXPECT_FALSE(out[1].ok);
  EXPECT_NE(out[1].error.find("exit code 2"), std::string::npos) << out[1].error;
  EXPECT_NE(out[1].error.find("layerz"), std::string::npos) << out[1].error;
  EXPECT_FALSE(out[2].ok);
}

TEST(SweepCliTest, SweepPointsRunInParallelAndTheTableHasFixedColumns) {
  fs::path dir = fresh_dir("sweep");
  write_text(dir / "s.yaml",
             "name: layers\nbase: " + kSmall + "\ngrid:\n  model.layers: [1, 2, 0]\n");
  SweepSpec spec = load_sweep((dir / "s.yaml").string());
  std::vector<SweepPoint> points = expand_sweep(spec);
  ASSERT_EQ(points.size(), 3u);
  int last_done = 0;
  ChildRunOptions o = children(2);
  o.on_progress = [&](int done, int total) {
    EXPECT_EQ(total, 3);
    EXPECT_EQ(done, last_done + 1);
    last_done = done;
  };
  std::vector<PointResult> results = run_sweep_points(spec, points, o);
  EXPECT_EQ(last_done, 3);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_TRUE(results[0].ok) << results[0].error;
  EXPECT_TRUE(results[1].ok) << results[1].error;
  EXPECT_FALSE(results[2].ok);  // zero layers: rejected by the workload loader
  std::string csv = sweep_csv(spec, results, report_columns());
  std::vector<std::vector<std::string>> rows = parse_csv(csv, "out.csv");
  ASSERT_EQ(rows.size(), 4u);
  // point, model.layers, status, error, then the fixed report columns.
  EXPECT_EQ(rows[0].size(), 4 + report_columns().size());
  EXPECT_EQ(rows[3][2], "error");
  // Twice the layers, more step time.
  size_t step = static_cast<size_t>(std::find(rows[0].begin(), rows[0].end(), "step_time_s") -
                                    rows[0].begin());
  ASSERT_LT(step, rows[0].size());
  EXPECT_GT(std::stod(rows[2][step]), std::stod(rows[1][step]));
  fs::remove_all(dir);
}

// Points differing only in hardware.* keys share one `run --serve` child (one
// compile), and their rows are those of point-by-point `podsim run`s: the
// serve path applies the same overrides to the same compiled program.
TEST(SweepCliTest, HardwareOnlyPointsShareOneCompileAndGiveThePointByPointRows) {
  fs::path dir = fresh_dir("sweep-reuse");
  // Scanned layers: a link-rate variant recompiles in the server, and the
  // recompiled program must carry the same notes as a fresh run's.
  write_text(dir / "s.yaml", "name: hbm\nbase: " + kSmall +
                                 "\nset: {model.layer_loop: scan}\ngrid:\n  "
                                 "hardware.hbm.bandwidth: [4.5e11, 9e11, 1.8e12]\n"
                                 "  hardware.ici.link_bandwidth: [4.1e10, 8.2e10]\n");
  SweepSpec spec = load_sweep((dir / "s.yaml").string());
  std::vector<SweepPoint> points = expand_sweep(spec);
  ASSERT_EQ(points.size(), 6u);
  SweepRunStats stats;
  int last_done = 0;
  ChildRunOptions o = children(1);
  o.on_progress = [&](int done, int total) {
    EXPECT_EQ(total, 6);
    EXPECT_EQ(done, last_done + 1);
    last_done = done;
  };
  std::vector<PointResult> results = run_sweep_points(spec, points, o, &stats);
  EXPECT_EQ(last_done, 6);
  EXPECT_EQ(stats.serve_children, 1);
  EXPECT_EQ(stats.point_children, 0);
  std::vector<RunJob> jobs;
  for (const SweepPoint& p : points) jobs.push_back(RunJob{kSmall, p.overrides(spec), "fast"});
  std::vector<JobOutcome> alone = run_jobs(jobs, children(2));
  ASSERT_EQ(results.size(), alone.size());
  for (size_t i = 0; i < results.size(); ++i) {
    ASSERT_TRUE(results[i].ok) << results[i].error;
    ASSERT_TRUE(alone[i].ok) << alone[i].error;
    EXPECT_EQ(results[i].metrics, alone[i].metrics) << "point " << i;
  }
  // The HBM rate changes the step time: the variants really were applied.
  EXPECT_NE(*field(alone[0], "step_time_s"), *field(alone[4], "step_time_s"));
  // -j 2 cuts the one group into two children of three points each.
  SweepRunStats two;
  std::vector<PointResult> again = run_sweep_points(spec, points, children(2), &two);
  EXPECT_EQ(two.serve_children, 2);
  EXPECT_EQ(two.point_children, 0);
  for (size_t i = 0; i < again.size(); ++i)
    EXPECT_EQ(again[i].metrics, results[i].metrics) << "point " << i;
  fs::remove_all(dir);
}

// Groups are the non-hardware overrides; a rejected hardware variant reruns
// alone and its error row reads as a plain `podsim run`'s.
TEST(SweepCliTest, EachNonHardwareSettingIsOneGroupAndARejectedVariantIsAnErrorRow) {
  fs::path dir = fresh_dir("sweep-groups");
  write_text(dir / "s.yaml",
             "name: mixed\nbase: " + kSmall +
                 "\ngrid:\n  model.layers: [1, 2]\n  hardware.hbm.bandwidth: [9e11, -1, 1.8e12]\n");
  SweepSpec spec = load_sweep((dir / "s.yaml").string());
  std::vector<SweepPoint> points = expand_sweep(spec);
  std::vector<CompileGroup> groups = group_by_compile(spec, points);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].compile_overrides, std::vector<std::string>{"model.layers=1"});
  EXPECT_EQ(groups[0].points, (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(groups[1].points, (std::vector<size_t>{3, 4, 5}));
  using Variant = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(groups[1].variants[2], (Variant{{"hbm.bandwidth", "1.8e12"}}));
  SweepRunStats stats;
  std::vector<PointResult> results = run_sweep_points(spec, points, children(2), &stats);
  EXPECT_EQ(stats.serve_children, 2);
  EXPECT_EQ(stats.point_children, 2);  // the two -1 points
  ASSERT_EQ(results.size(), 6u);
  for (size_t i : {0, 2, 3, 5}) EXPECT_TRUE(results[i].ok) << i << ": " << results[i].error;
  std::vector<JobOutcome> alone =
      run_jobs({RunJob{kSmall, points[1].overrides(spec), "fast"}}, children());
  ASSERT_FALSE(alone[0].ok);
  for (size_t i : {1, 4}) {
    EXPECT_FALSE(results[i].ok);
    EXPECT_EQ(results[i].error, alone[0].error);
  }
  fs::remove_all(dir);
}

// A server that crashes (or hangs past the timeout) answers nothing: its
// points rerun alone and become the error rows a plain run gives.
TEST(SweepCliTest, ACrashedOrHungServerLeavesItsPointsToRunAlone) {
  fs::path dir = fresh_dir("sweep-serve-crash");
  write_text(dir / "s.yaml",
             "name: hbm\nbase: " + kSmall + "\ngrid:\n  hardware.hbm.bandwidth: [9e11, 1.8e12]\n");
  SweepSpec spec = load_sweep((dir / "s.yaml").string());
  std::vector<SweepPoint> points = expand_sweep(spec);
  write_text(dir / "crash", "#!/bin/sh\necho 'about to crash' >&2\nkill -SEGV $$\n");
  write_text(dir / "hang", "#!/bin/sh\nexec sleep 30\n");
  ::chmod((dir / "crash").c_str(), 0755);
  ::chmod((dir / "hang").c_str(), 0755);
  ChildRunOptions o = children();
  o.podsim_binary = (dir / "crash").string();
  SweepRunStats stats;
  std::vector<PointResult> results = run_sweep_points(spec, points, o, &stats);
  EXPECT_EQ(stats.serve_children, 1);
  EXPECT_EQ(stats.point_children, 2);
  ASSERT_EQ(results.size(), 2u);
  for (const PointResult& r : results) {
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.error.find("signal 11"), std::string::npos) << r.error;
  }
  o.podsim_binary = (dir / "hang").string();
  o.timeout_seconds = 0.3;
  results = run_sweep_points(spec, points, o, &stats);
  EXPECT_EQ(stats.point_children, 2);
  for (const PointResult& r : results)
    EXPECT_NE(r.error.find("timed out after 0.3 s"), std::string::npos) << r.error;
  fs::remove_all(dir);
}

// Copies the shipped baselines of the small workload (the tests below run
// them several times; every shipped baseline runs once in
// RegressPassesOnEveryShippedBaseline) with the workload path made absolute.
fs::path copy_small_baselines() {
  fs::path dir = fresh_dir("baselines");
  for (const std::string& f :
       baseline_files(std::string(PODSIM_SOURCE_DIR) + "/reports/baselines")) {
    if (!fs::path(f).filename().string().starts_with("small")) continue;
    Baseline b = load_baseline(f);
    b.workload = b.workload_path;
    write_text(dir / fs::path(f).filename(), baseline_json(b));
  }
  return dir;
}

// CI's regression tracking: every tracked run, the calibration
// configs and the default 1T workload among them, predicts what its
// baseline says, so a change that moves a utilization number fails here
// until a reviewed `podsim regress --update`.
TEST(SweepCliTest, RegressPassesOnEveryShippedBaseline) {
  const std::string dir = std::string(PODSIM_SOURCE_DIR) + "/reports/baselines";
  ASSERT_GE(baseline_files(dir).size(), 9u);
  RegressResult shipped = run_regress(RegressOptions{dir, false, children(2)});
  EXPECT_FALSE(shipped.regressed) << shipped.table;
}

TEST(SweepCliTest, RegressPassesOnSmallBaselinesAndCatchesADeliberateChange) {
  fs::path dir = copy_small_baselines();
  RegressOptions options{dir.string(), false, children(2)};
  RegressResult clean = run_regress(options);
  EXPECT_FALSE(clean.regressed) << clean.table;

  // A deliberate change of the workload: one more layer moves step time,
  // parameters and flops.
  fs::path small = dir / "small.json";
  Baseline b = load_baseline(small.string());
  b.overrides.push_back("model.layers=3");
  write_text(small, baseline_json(b));
  RegressResult changed = run_regress(options);
  EXPECT_TRUE(changed.regressed);
  EXPECT_NE(changed.table.find("parameters"), std::string::npos) << changed.table;
  EXPECT_NE(changed.table.find("CHANGED: slower"), std::string::npos) << changed.table;

  // --update accepts the change: the next run passes again.
  options.update = true;
  EXPECT_TRUE(run_regress(options).regressed);  // reports before rewriting
  options.update = false;
  RegressResult accepted = run_regress(options);
  EXPECT_FALSE(accepted.regressed) << accepted.table;
  EXPECT_NE(podsim::cli_test::read_file(small).find("model.layers=3"), std::string::npos);
  fs::remove_all(dir);
}

TEST(SweepCliTest, RegressCatchesAnEditedBaselineValue) {
  fs::path dir = copy_small_baselines();
  fs::path small = dir / "small.json";
  Baseline b = load_baseline(small.string());
  bool edited = false;
  for (MetricBaseline& m : b.metrics)
    if (m.name == "step_time_s") {
      *m.number *= 1.5;  // 50% off, far outside the 1% tolerance
      m.text = fmt::format("{}", *m.number);
      edited = true;
    }
  ASSERT_TRUE(edited);
  write_text(small, baseline_json(b));
  RegressResult r = run_regress(RegressOptions{dir.string(), false, children()});
  EXPECT_TRUE(r.regressed);
  EXPECT_NE(r.table.find("step_time_s"), std::string::npos) << r.table;
  fs::remove_all(dir);
}

// The time-by-part fields of a real run add up: every compute op and every
// collective wait belongs to exactly one pass and one component, so each
// split sums to compute + exposed communication (reports/parts.h).
TEST(SweepCliTest, TimeByPassAndByComponentAddUpToComputePlusExposed) {
  std::vector<JobOutcome> out = run_jobs({RunJob{kSmall, {}, "fast"}}, children());
  ASSERT_TRUE(out[0].ok) << out[0].error;
  auto number = [&out](const std::string& name) {
    const std::optional<double> v = out[0].metrics.number(name);
    EXPECT_TRUE(v.has_value()) << name;
    return v.value_or(0.0);
  };
  const double busy =
      number("time_breakdown_s.compute") + number("time_breakdown_s.exposed_communication");
  double by_pass = 0, by_component = 0;
  for (const char* key : {"forward", "recompute", "backward", "optimizer", "other"})
    by_pass += number(std::string("time_by_pass_s.") + key);
  for (const char* key : {"attention", "ffn", "moe", "embedding_and_loss", "other"})
    by_component += number(std::string("time_by_component_s.") + key);
  EXPECT_NEAR(by_pass, busy, 1e-9 * busy);
  EXPECT_NEAR(by_component, busy, 1e-9 * busy);
  // small.yaml is a dense transformer: its builder names every layer op, so
  // nothing but the backward's seed lands in "other", and it has no MoE.
  EXPECT_GT(number("time_by_pass_s.forward"), 0);
  EXPECT_GT(number("time_by_pass_s.backward"), number("time_by_pass_s.forward"));
  EXPECT_EQ(number("time_by_component_s.moe"), 0);
  EXPECT_LT(number("time_by_component_s.other"), 0.01 * busy);
}

// `podsim calibrate` end to end: one point and two checks on the same
// workload run it once, and the page has both tables with the run's values.
TEST(SweepCliTest, CalibrateRunsEachWorkloadOnceForPointsAndChecks) {
  const fs::path dir = fresh_dir("calibrate");
  write_text(dir / "measured.yaml", fmt::format(R"(source: test
points:
  - config: Small
    workload: {0}
    metric: steps_per_second
    measured: 1000
checks:
  - config: Small
    workload: {0}
    quantity: forward share
    field: time_by_pass_s.forward
    per_step: true
    measured: 0.3
  - config: Small
    workload: {0}
    quantity: MFU
    field: mfu
    range: [0.5, 0.62]
)",
                                                kSmall));
  int progress_calls = 0;
  ChildRunOptions o = children(2);
  o.on_progress = [&progress_calls](int, int total) {
    EXPECT_EQ(total, 1);  // one workload, one child
    ++progress_calls;
  };
  MeasuredSet set = load_measured((dir / "measured.yaml").string());
  CalibrationResult result = run_calibration(set, o);
  EXPECT_EQ(progress_calls, 1);
  ASSERT_EQ(result.rows.size(), 1u);
  ASSERT_EQ(result.checks.size(), 2u);
  ASSERT_TRUE(result.rows[0].ok) << result.rows[0].error;
  ASSERT_TRUE(result.checks[0].ok) << result.checks[0].error;
  // The forward share is the run's forward time over its step time.
  std::vector<JobOutcome> run = run_jobs({RunJob{kSmall, {}, "fast"}}, children());
  const double forward = std::stod(*field(run[0], "time_by_pass_s.forward"));
  const double step = std::stod(*field(run[0], "step_time_s"));
  EXPECT_DOUBLE_EQ(result.checks[0].predicted, forward / step);
  // The small workload is far below GSPMD's utilization: the range fails.
  EXPECT_FALSE(result.checks[1].holds);

  const fs::path page = dir / "calibration.md";
  auto r = podsim::cli_test::run_merged(fmt::format(
      "calibrate --measured {} -o {}", (dir / "measured.yaml").string(), page.string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string md = read_text_file(page);
  EXPECT_NE(md.find("| Small | small.yaml | steps_per_second | 1000 |"), std::string::npos) << md;
  EXPECT_NE(md.find("## Other measured numbers"), std::string::npos) << md;
  EXPECT_NE(md.find("| Small | MFU | `mfu` | 0.5 to 0.62 |"), std::string::npos) << md;
  EXPECT_NE(md.find("does not hold"), std::string::npos) << md;
  EXPECT_NE(md.find("2 of 2 checks ran"), std::string::npos) << md;
  fs::remove_all(dir);
}

// --plot checks before the sweep: without gnuplot on PATH nothing runs and
// the exit is 2 (a usage error), not 0 after the whole sweep.
TEST(SweepCliTest, PlotWithoutGnuplotFailsBeforeTheSweep) {
  fs::path dir = fresh_dir("plot_nognuplot");
  write_text(dir / "s.yaml", "name: layers\nbase: " + kSmall + "\ngrid:\n  model.layers: [1, 2]\n");
  int code = -1;
  const std::string out = podsim::cli_test::detail::capture_stdout(
      fmt::format("env PATH=/nonexistent {} sweep {} -o {} --plot {} 2>&1", PODSIM_BINARY,
                  (dir / "s.yaml").string(), (dir / "r.csv").string(), (dir / "p.svg").string()),
      code);
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("gnuplot"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(dir / "r.csv")) << "the sweep ran";
  fs::remove_all(dir);
}

// A stand-in gnuplot keeps the script podsim hands it: two swept keys give
// one line per value of the second, and a misspelt --plot-metric is refused
// up front with the nearest field.
TEST(SweepCliTest, PlotDrawsOneLinePerSecondKeyValue) {
  fs::path dir = fresh_dir("plot_fake");
  fs::create_directories(dir / "bin");
  write_text(dir / "bin" / "gnuplot",
             "#!/bin/sh\ncp \"$1\" \"" + (dir / "seen.gp").string() + "\"\n");
  fs::permissions(dir / "bin" / "gnuplot", fs::perms::owner_all);
  write_text(dir / "s.yaml",
             "name: grid2\nbase: " + kSmall +
                 "\ngrid:\n  model.layers: [1, 2]\n  training.remat: [none, full]\n");
  auto run = [&](const std::string& extra, int& code) {
    return podsim::cli_test::detail::capture_stdout(
        fmt::format("env PATH={}:$PATH {} sweep {} -j 2 -o {} --plot {} {} 2>&1",
                    (dir / "bin").string(), PODSIM_BINARY, (dir / "s.yaml").string(),
                    (dir / "r.csv").string(), (dir / "p.svg").string(), extra),
        code);
  };
  int code = -1;
  std::string out = run("--plot-metric step_time --plot-metric peak_memory_bytes", code);
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("did you mean 'step_time_s'"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(dir / "r.csv"));
  out = run("--plot-metric step_time_s --plot-metric tokens_per_second", code);
  ASSERT_EQ(code, 0) << out;
  const std::string script = podsim::cli_test::read_file(dir / "seen.gp");
  EXPECT_NE(script.find("title 'training.remat = none' noenhanced"), std::string::npos) << script;
  EXPECT_NE(script.find("title 'training.remat = full' noenhanced"), std::string::npos) << script;
  EXPECT_NE(script.find("set ylabel 'tokens/s' noenhanced"), std::string::npos) << script;
  // The title names the sweep, its base workload and the hardware.
  EXPECT_NE(script.find("title 'grid2: small on tpuv3, 8 devices'"), std::string::npos) << script;
  EXPECT_NE(script.find("set multiplot layout 2,1"), std::string::npos) << script;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace podsim::studies
