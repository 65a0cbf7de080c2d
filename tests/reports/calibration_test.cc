// Calibration table (reports/calibration.h): the measured-numbers file, the
// predicted metric and error arithmetic, the markdown page.
#include "reports/calibration.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "common/error.h"

namespace podsim::reports {
namespace {

const char* kMeasured = R"(source: "anchors.md"
points:
  - config: Dense
    workload: ../w/dense.yaml
    metric: tokens_per_second
    measured: 4000
  - config: Moe
    workload: /abs/moe.yaml
    metric: steps_per_second
    measured: 0.5
    source: "anchors.md MoE table"
)";

JobOutcome run_with(double step_time_s, double tokens_per_second, double mfu) {
  JobOutcome run;
  run.ok = true;
  run.metrics = {{"step_time_s", fmt::format("{}", step_time_s)},
                 {"tokens_per_second", fmt::format("{}", tokens_per_second)},
                 {"mfu", fmt::format("{}", mfu)}};
  return run;
}

TEST(CalibrationTest, ParsesPointsAndResolvesPaths) {
  MeasuredSet set = parse_measured(kMeasured, "/repo/reports/baselines/measured.yaml");
  ASSERT_EQ(set.points.size(), 2u);
  EXPECT_EQ(set.source, "anchors.md");
  EXPECT_EQ(set.points[0].workload_path, "/repo/reports/w/dense.yaml");
  EXPECT_EQ(set.points[1].workload_path, "/abs/moe.yaml");
  EXPECT_DOUBLE_EQ(set.points[1].measured, 0.5);
  EXPECT_EQ(set.points[1].source, "anchors.md MoE table");
}

TEST(CalibrationTest, BadFilesArePositionedUserErrors) {
  EXPECT_THROW(parse_measured("points: []\n", "m.yaml"), UserError);
  EXPECT_THROW(parse_measured("points:\n  - config: a\n    workload: w\n    metric: flops\n    measured: 1\n", "m.yaml"),
               UserError);
  try {
    parse_measured("points:\n  - config: a\n    workload: w\n    metric: steps_per_second\n    measured: fast\n",
                   "m.yaml");
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("m.yaml:5"), std::string::npos) << e.what();
  }
}

TEST(CalibrationTest, TokensPerSecondErrorIsPredictedOverMeasuredMinusOne) {
  MeasuredSet set = parse_measured(kMeasured, "m.yaml");
  // 5000 predicted vs 4000 measured: 5000/4000 - 1 = +25%.
  CalibrationRow row = calibration_row(set.points[0], run_with(1.0, 5000, 0.4));
  ASSERT_TRUE(row.ok);
  EXPECT_DOUBLE_EQ(row.predicted, 5000);
  EXPECT_DOUBLE_EQ(row.relative_error, 0.25);
}

TEST(CalibrationTest, StepsPerSecondIsTheInverseStepTime) {
  MeasuredSet set = parse_measured(kMeasured, "m.yaml");
  // step 4 s -> 0.25 steps/s vs 0.5 measured: 0.25/0.5 - 1 = -50%.
  CalibrationRow row = calibration_row(set.points[1], run_with(4.0, 123, 0.1));
  ASSERT_TRUE(row.ok);
  EXPECT_DOUBLE_EQ(row.predicted, 0.25);
  EXPECT_DOUBLE_EQ(row.relative_error, -0.5);
}

TEST(CalibrationTest, MarkdownShowsErrorsMeanAndFailures) {
  MeasuredSet set = parse_measured(kMeasured, "m.yaml");
  JobOutcome crashed;
  crashed.error = "crashed with signal 11 (Segmentation fault)";
  std::vector<CalibrationRow> rows = {calibration_row(set.points[0], run_with(1.0, 5000, 0.4)),
                                      calibration_row(set.points[1], crashed)};
  std::string md = calibration_markdown(set, rows);
  EXPECT_NE(md.find("| Dense | dense.yaml | tokens_per_second | 4000 | 5000 | +25.0% |"), std::string::npos) << md;
  EXPECT_NE(md.find("| Moe | moe.yaml | steps_per_second | 0.5 | failed |"), std::string::npos) << md;
  // Only the run that ran enters the mean: |+25%| / 1.
  // +25% is outside the 15% bar: 0 of the 2 rows within it.
  EXPECT_NE(md.find("1 of 2 configs ran; mean |error| over them 25.0%; 0 of 2 within 15%"), std::string::npos) << md;
  EXPECT_NE(md.find("- Moe: crashed with signal 11"), std::string::npos) << md;
  EXPECT_EQ(md.find("## Notes"), std::string::npos) << md;
}

TEST(CalibrationTest, WithinCountAndNotes) {
  MeasuredSet set = parse_measured(std::string(kMeasured) + "notes: |\n  Why the MoE row misses.\n", "m.yaml");
  EXPECT_EQ(set.notes, "Why the MoE row misses.\n");
  // 4400 / 4000 - 1 = +10% (within 15%); 1 / 2 s = 0.5 steps/s = measured (0%).
  std::vector<CalibrationRow> rows = {calibration_row(set.points[0], run_with(1.0, 4400, 0.4)),
                                      calibration_row(set.points[1], run_with(2.0, 1, 0.1))};
  std::string md = calibration_markdown(set, rows);
  EXPECT_NE(md.find("2 of 2 configs ran; mean |error| over them 5.0%; 2 of 2 within 15%"), std::string::npos) << md;
  EXPECT_NE(md.find("\n## Notes\n\nWhy the MoE row misses.\n"), std::string::npos) << md;
}

TEST(CalibrationTest, ShippedMeasuredFileCoversEveryAnchorNumber) {
  // anchors.md: three Lingvo dense configs (tokens/s) and two GShard MoE
  // configs (steps/s).
  MeasuredSet set = load_measured(std::string(PODSIM_SOURCE_DIR) + "/reports/baselines/measured.yaml");
  ASSERT_EQ(set.points.size(), 5u);
  int tokens = 0, steps = 0;
  for (const MeasuredPoint& p : set.points) {
    (p.metric == "tokens_per_second" ? tokens : steps)++;
    EXPECT_TRUE(std::filesystem::exists(p.workload_path)) << p.workload_path;
  }
  EXPECT_EQ(tokens, 3);
  EXPECT_EQ(steps, 2);
}

}  // namespace
}  // namespace podsim::reports
