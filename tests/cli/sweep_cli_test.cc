// Sweeps, regressions and crash isolation with real `podsim run` children
// (reports/sweep_runner.h, reports/regress.h), using the built podsim
// binary: a failing or crashing point becomes an error row; regress on a
// copy of the shipped baselines passes, and detects a deliberate change.
#include <gtest/gtest.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "reports/calibration.h"
#include "reports/output_file.h"
#include "reports/regress.h"
#include "reports/sweep.h"
#include "reports/sweep_runner.h"
#include "tests/cli/cli_test_util.h"

namespace podsim::reports {
namespace {

namespace fs = std::filesystem;
using podsim::cli_test::fresh_dir;

const std::string kSmall = std::string(PODSIM_SOURCE_DIR) + "/workloads/small.yaml";

ChildRunOptions children(int jobs = 1) {
  ChildRunOptions o;
  o.podsim_binary = PODSIM_BINARY;
  o.jobs = jobs;
  return o;
}

void write_text(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

const std::string* field(const JobOutcome& o, const std::string& name) {
  for (const auto& [k, v] : o.metrics)
    if (k == name) return &v;
  return nullptr;
}

TEST(SweepCliTest, ChildRunsGiveTheReportFieldsAndFailuresBecomeErrors) {
  std::vector<RunJob> jobs = {RunJob{kSmall, {}, "fast"},
                              RunJob{kSmall, {"model.layerz=3"}, "fast"},  // a user error in the child
                              RunJob{"/nonexistent/w.yaml", {}, "fast"}};
  std::vector<JobOutcome> out = run_jobs(jobs, children(2));
  ASSERT_EQ(out.size(), 3u);
  ASSERT_TRUE(out[0].ok) << out[0].error;
  ASSERT_NE(field(out[0], "workload"), nullptr);
  EXPECT_EQ(*field(out[0], "workload"), "small");
  EXPECT_FALSE(out[1].ok);
  EXPECT_NE(out[1].error.find("exit code 2"), std::string::npos) << out[1].error;
  EXPECT_NE(out[1].error.find("layerz"), std::string::npos) << out[1].error;
  EXPECT_FALSE(out[2].ok);
}

TEST(SweepCliTest, CrashingChildBecomesAnErrorRowNotACrash) {
  // A stand-in "podsim" that dies of SIGSEGV, as a crashing SystemC run would.
  fs::path dir = fresh_dir("crash");
  fs::path fake = dir / "podsim";
  write_text(fake, "#!/bin/sh\necho 'about to crash' >&2\nkill -SEGV $$\n");
  ::chmod(fake.c_str(), 0755);
  ChildRunOptions o = children();
  o.podsim_binary = fake.string();
  std::vector<JobOutcome> out = run_jobs({RunJob{kSmall, {}, "fast"}}, o);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FALSE(out[0].ok);
  EXPECT_NE(out[0].error.find("signal 11"), std::string::npos) << out[0].error;
  EXPECT_NE(out[0].error.find("about to crash"), std::string::npos) << out[0].error;
  fs::remove_all(dir);
}

TEST(SweepCliTest, HungChildIsKilledAfterTheTimeout) {
  fs::path dir = fresh_dir("hang");
  fs::path fake = dir / "podsim";
  write_text(fake, "#!/bin/sh\nexec sleep 30\n");
  ::chmod(fake.c_str(), 0755);
  ChildRunOptions o = children();
  o.podsim_binary = fake.string();
  o.timeout_seconds = 0.3;
  auto start = std::chrono::steady_clock::now();
  std::vector<JobOutcome> out = run_jobs({RunJob{kSmall, {}, "fast"}}, o);
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FALSE(out[0].ok);
  EXPECT_NE(out[0].error.find("timed out after 0.3 s"), std::string::npos) << out[0].error;
  EXPECT_LT(waited, 20.0);  // killed, not waited for the 30 s sleep
  fs::remove_all(dir);
}

TEST(SweepCliTest, SweepPointsRunInParallelAndTheTableHasFixedColumns) {
  fs::path dir = fresh_dir("sweep");
  write_text(dir / "s.yaml", "name: layers\nbase: " + kSmall + "\ngrid:\n  model.layers: [1, 2, 0]\n");
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
  size_t step = static_cast<size_t>(std::find(rows[0].begin(), rows[0].end(), "step_time_s") - rows[0].begin());
  ASSERT_LT(step, rows[0].size());
  EXPECT_GT(std::stod(rows[2][step]), std::stod(rows[1][step]));
  fs::remove_all(dir);
}

// Copies the shipped baselines with the workload path made absolute.
fs::path copy_baselines() {
  fs::path dir = fresh_dir("baselines");
  for (const std::string& f : baseline_files(std::string(PODSIM_SOURCE_DIR) + "/reports/baselines")) {
    Baseline b = load_baseline(f);
    b.workload = b.workload_path;
    write_text(dir / fs::path(f).filename(), baseline_json(b));
  }
  return dir;
}

TEST(SweepCliTest, RegressPassesOnShippedBaselinesAndCatchesADeliberateChange) {
  fs::path dir = copy_baselines();
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
  EXPECT_NE(changed.table.find("REGRESSION"), std::string::npos) << changed.table;

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
  fs::path dir = copy_baselines();
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

// Regenerates docs/calibration.md (minutes: it simulates every calibration
// config) until `podsim calibrate` is wired into the CLI:
//   test_cli --gtest_also_run_disabled_tests --gtest_filter='*GenerateCalibrationDoc'
TEST(SweepCliTest, DISABLED_GenerateCalibrationDoc) {
  MeasuredSet set = load_measured(std::string(PODSIM_SOURCE_DIR) + "/reports/baselines/measured.yaml");
  std::vector<CalibrationRow> rows = run_calibration(set, children(2));
  ASSERT_EQ(rows.size(), set.points.size());
  write_file_atomically(std::string(PODSIM_SOURCE_DIR) + "/docs/calibration.md", calibration_markdown(set, rows));
}

}  // namespace
}  // namespace podsim::reports
