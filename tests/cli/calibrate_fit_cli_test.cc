// `podsim run --serve` and `podsim calibrate --fit` with the built podsim
// binary (driver/workload_server.h, studies/fit.h): a served
// variant is the run `--set hardware.<key>=<value>` gives, a bad variant is
// an answer and not the end of the server, and the fit recovers a parameter
// from measurements made with it, also for a config it leaves out.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "driver/workload_server.h"
#include "studies/calibration_markdown.h"
#include "studies/fit.h"
#include "studies/job_runner.h"
#include "tests/cli/cli_test_util.h"

namespace podsim::studies {
namespace {

namespace fs = std::filesystem;
using driver::JobOutcome;
using driver::WorkloadServer;
using podsim::cli_test::fresh_dir;

const std::string kSmall = std::string(PODSIM_SOURCE_DIR) + "/workloads/small.yaml";

std::string field(const JobOutcome& o, const std::string& name) {
  return o.metrics.text(name).value_or("");
}

JobOutcome separate_run(const std::vector<std::string>& overrides) {
  ChildRunOptions o;
  o.podsim_binary = PODSIM_BINARY;
  return run_jobs({RunJob{kSmall, overrides, "fast"}}, o).at(0);
}

TEST(WorkloadServerTest, AnswersEachVariantAsASeparateRunWould) {
  WorkloadServer server(PODSIM_BINARY, kSmall);
  server.send({});
  server.send({{"core.op_overhead_s", "2e-6"}, {"ici.link_efficiency", "0.5"}});
  server.send({{"core.warp_drive", "1"}});  // rejected, the server goes on
  server.send({{"core.op_overhead_s", "2e-6"}});
  JobOutcome base = server.receive();
  JobOutcome both = server.receive();
  JobOutcome bad = server.receive();
  JobOutcome overhead = server.receive();
  ASSERT_TRUE(base.ok) << base.error;
  ASSERT_TRUE(both.ok) << both.error;
  ASSERT_TRUE(overhead.ok) << overhead.error;
  EXPECT_FALSE(bad.ok);
  EXPECT_NE(bad.error.find("unknown hardware key 'core.warp_drive'"), std::string::npos)
      << bad.error;
  // Same program, same hardware: the same digits as separate runs.
  EXPECT_EQ(field(base, "step_time_s"), field(separate_run({}), "step_time_s"));
  EXPECT_EQ(
      field(both, "step_time_s"),
      field(separate_run({"hardware.core.op_overhead_s=2e-6", "hardware.ici.link_efficiency=0.5"}),
            "step_time_s"));
  EXPECT_EQ(field(overhead, "step_time_s"),
            field(separate_run({"hardware.core.op_overhead_s=2e-6"}), "step_time_s"));
  // A larger per-op cost lengthens the step; slower links on top more so.
  EXPECT_GT(std::stod(field(overhead, "step_time_s")), std::stod(field(base, "step_time_s")));
  EXPECT_GT(std::stod(field(both, "step_time_s")), std::stod(field(overhead, "step_time_s")));
}

TEST(WorkloadServerTest, AWorkloadThatDoesNotLoadIsAnErrorAnswer) {
  WorkloadServer server(PODSIM_BINARY, "/nonexistent/w.yaml");
  server.send({});
  JobOutcome answer = server.receive();
  EXPECT_FALSE(answer.ok);
  EXPECT_NE(answer.error.find("exit code 2"), std::string::npos) << answer.error;
  // Asking again gives the same reason, not a hang or a crash.
  server.send({});
  EXPECT_EQ(server.receive().error, answer.error);
}

// Answers read as one CSV table: the header once, then one row per request
// (an "error: " line for a rejected one).
TEST(ServeCliTest, HeaderOnceThenOneRowPerRequest) {
  const fs::path dir = fresh_dir("serve_header");
  std::ofstream(dir / "in.txt")
      << "\nhardware.core.op_overhead_s=2e-6\nhardware.core.warp_drive=1\n"
         "hardware.ici.link_efficiency=0.5\n";
  auto r =
      cli_test::run_split("run " + kSmall + " --format csv --serve <" + (dir / "in.txt").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines;
  std::istringstream text(r.out);
  for (std::string line; std::getline(text, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 5u) << r.out;  // header + 3 rows + 1 error
  EXPECT_TRUE(lines[0].starts_with("workload,hardware,fidelity,")) << lines[0];
  for (size_t i : {1u, 2u, 4u}) EXPECT_TRUE(lines[i].starts_with("small,tpuv3,fast,")) << lines[i];
  EXPECT_TRUE(lines[3].starts_with("error: ")) << lines[3];
  fs::remove_all(dir);
}

TEST(ServeCliTest, ServeNeedsCsvAndStdout) {
  auto r = cli_test::run_split("run " + kSmall + " --serve </dev/null");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--format csv"), std::string::npos) << r.err;
}

// Measurements made by podsim itself with core.op_overhead_s = 4 us; the
// fit starts at the preset (0.5 us) and must find 4 us again. The step is
// fixed work plus (number of kernels) x overhead, so the prediction moves
// with the parameter one to one in the limit; a grid step of the search is
// (range ratio 100)^(1/64) = 1.075 in the parameter, so the fit lands
// within about 4% of 4 us and the prediction within the same.
TEST(CalibrateFitCliTest, RecoversAParameterFromMeasurementsMadeWithIt) {
  const JobOutcome truth = separate_run({"hardware.core.op_overhead_s=4e-6"});
  ASSERT_TRUE(truth.ok) << truth.error;
  const double step = std::stod(field(truth, "step_time_s"));
  const double tokens_per_second = std::stod(field(truth, "tokens_per_second"));
  const fs::path dir = fresh_dir("calibrate_fit");
  std::ofstream(dir / "measured.yaml")
      << fmt::format(R"(points:
  - config: Steps
    workload: {0}
    metric: steps_per_second
    measured: {1:.17g}
  - config: Tokens
    workload: {0}
    metric: tokens_per_second
    measured: {2:.17g}
checks:
  - config: Steps
    workload: {0}
    quantity: MFU
    field: mfu
    measured: {3:.17g}
fit:
  - key: core.op_overhead_s
    range: [0.2e-6, 20e-6]
    why: test
)",
                     kSmall, 1.0 / step, tokens_per_second, std::stod(field(truth, "mfu")));
  MeasuredSet set = load_measured((dir / "measured.yaml").string());
  FitOptions options;
  options.podsim_binary = PODSIM_BINARY;
  std::vector<std::string> news;
  options.on_progress = [&news](const std::string& line) { news.push_back(line); };
  // After each of the 3 searches, the result so far: the first page already
  // has the fit on all points, and says it is partial.
  std::vector<std::pair<int, int>> searches_seen;
  std::string first_page;
  options.on_search_done = [&](const FitResult& partial) {
    searches_seen.emplace_back(partial.searches, partial.searches_planned);
    if (first_page.empty()) first_page = fit_markdown(set, partial);
  };
  FitResult fit = fit_calibration(set, options);
  EXPECT_EQ(searches_seen, (std::vector<std::pair<int, int>>{{1, 3}, {2, 3}, {3, 3}}));
  EXPECT_NE(first_page.find("**Partial**: 1 of 3 searches done"), std::string::npos) << first_page;
  EXPECT_NE(first_page.find("| Steps |"), std::string::npos) << first_page;

  ASSERT_EQ(fit.preset_values.size(), 1u);
  EXPECT_DOUBLE_EQ(fit.preset_values[0], 0.5e-6);  // hw_models/presets/tpuv3.yaml
  EXPECT_NEAR(fit.fitted_values[0] / 4e-6, 1.0, 0.045);
  ASSERT_EQ(fit.points.size(), 2u);
  for (const FitPointRow& p : fit.points) {
    ASSERT_TRUE(p.start.ok) << p.start.error;
    EXPECT_GT(p.start.relative_error, 0.2);  // the preset's smaller overhead: predicts too fast
    ASSERT_TRUE(p.fitted.ok) << p.fitted.error;
    EXPECT_NEAR(p.fitted.relative_error, 0.0, 0.045);
    // Left out, the other point (the same runs) still pins the parameter.
    ASSERT_TRUE(p.left_out_ran);
    EXPECT_NEAR(p.left_out.relative_error, 0.0, 0.045);
    EXPECT_NEAR(p.left_out_values.at(0) / 4e-6, 1.0, 0.045);
  }
  EXPECT_LT(fit.fitted_objective, fit.start_objective);
  EXPECT_EQ(fit.searches, 3);  // all points, then each left out
  EXPECT_FALSE(news.empty());
  // The prediction is a throughput: a smaller overhead raises it, a larger
  // one lowers it, for both points alike (same workload).
  ASSERT_EQ(fit.sensitivity.size(), 1u);
  EXPECT_GT(fit.sensitivity[0].at_low[0], 0.0);   // 0.2 us: more steps/s than at 0.5 us
  EXPECT_LT(fit.sensitivity[0].at_high[0], 0.0);  // 20 us: fewer
  EXPECT_NEAR(fit.sensitivity[0].at_high[0], fit.sensitivity[0].at_high[1], 1e-9);

  // The check is not fitted, but made with the same overhead it follows.
  ASSERT_EQ(fit.checks_start.size(), 1u);
  ASSERT_EQ(fit.checks_fitted.size(), 1u);
  EXPECT_GT(fit.checks_start[0].relative_error, 0.2);
  EXPECT_NEAR(fit.checks_fitted[0].relative_error, 0.0, 0.045);

  const std::string page = fit_markdown(set, fit);
  EXPECT_EQ(page.find("Partial"), std::string::npos);
  EXPECT_NE(page.find("## Other measured numbers, not fitted"), std::string::npos);
  EXPECT_NE(page.find("| `core.op_overhead_s` | 2e-07 to 2e-05 | 5e-07 |"), std::string::npos)
      << page;
  EXPECT_NE(page.find("| Steps |"), std::string::npos);
  EXPECT_NE(page.find("left out (each predicted by a fit to the others)"), std::string::npos);
  EXPECT_NE(page.find("## Values fitted without each config"), std::string::npos);
}

TEST(CalibrateFitCliTest, ANonNumericKeyIsAUserError) {
  const fs::path dir = fresh_dir("calibrate_fit_model");
  std::ofstream(dir / "measured.yaml") << fmt::format(
      "points:\n  - config: A\n    workload: {}\n    metric: steps_per_second\n    measured: 1\n"
      "fit:\n  - key: core.model\n    range: [1, 2]\n    why: x\n",
      kSmall);
  auto r = cli_test::run_split("calibrate --fit --measured " + (dir / "measured.yaml").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("'core.model' is 'systolic', not a number to fit"), std::string::npos)
      << r.err;
}

TEST(CalibrateFitCliTest, AFileWithoutAFitListIsAUserError) {
  const fs::path dir = fresh_dir("calibrate_fit_none");
  std::ofstream(dir / "measured.yaml") << fmt::format(
      "points:\n  - config: A\n    workload: {}\n    metric: steps_per_second\n    measured: 1\n",
      kSmall);
  auto r = cli_test::run_split("calibrate --fit --measured " + (dir / "measured.yaml").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no parameter under 'fit:'"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace podsim::studies
