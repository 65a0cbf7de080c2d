// The markdown pages of `podsim calibrate` (studies/calibration_markdown.h):
// errors, the mean and the count within the bar, failures, notes, points
// outside the statistics, the table of checks. The fit's page is tested with
// a real fit in tests/cli/calibrate_fit_cli_test.cc.
#include "studies/calibration_markdown.h"

#include <gtest/gtest.h>

#include "tests/studies/measured_fixture.h"

namespace podsim::studies {
namespace {

using namespace measured_fixture;

TEST(CalibrationMarkdown, MarkdownShowsErrorsMeanAndFailures) {
  MeasuredSet set = parse_measured(kMeasured, "m.yaml");
  JobOutcome crashed;
  crashed.error = "crashed with signal 11 (Segmentation fault)";
  std::vector<CalibrationRow> rows = {calibration_row(set.points[0], run_with(1.0, 5000, 0.4)),
                                      calibration_row(set.points[1], crashed)};
  std::string md = calibration_markdown(set, rows);
  EXPECT_NE(md.find("| Dense | dense.yaml | tokens_per_second | 4000 | 5000 | +25.0% |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| Moe | moe.yaml | steps_per_second | 0.5 | failed |"), std::string::npos)
      << md;
  // Only the run that ran enters the mean: |+25%| / 1.
  // +25% is outside the 15% bar: 0 of the 2 rows within it.
  EXPECT_NE(md.find("1 of 2 calibration configs ran; mean |error| over them 25.0% (the bar: 5%); 0 "
                    "of 2 within 10%"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("- Moe: crashed with signal 11"), std::string::npos) << md;
  EXPECT_EQ(md.find("## Notes"), std::string::npos) << md;
}

TEST(CalibrationMarkdown, WithinCountAndNotes) {
  MeasuredSet set =
      parse_measured(std::string(kMeasured) + "notes: |\n  Why the MoE row misses.\n", "m.yaml");
  EXPECT_EQ(set.notes, "Why the MoE row misses.\n");
  // 4300 / 4000 - 1 = +7.5% (within 10%); 1 / 2 s = 0.5 steps/s = measured (0%);
  // mean (7.5 + 0) / 2 = 3.75%, printed 3.7 (4300 / 4000 - 1 is 0.07499... in doubles).
  std::vector<CalibrationRow> rows = {calibration_row(set.points[0], run_with(1.0, 4300, 0.4)),
                                      calibration_row(set.points[1], run_with(2.0, 1, 0.1))};
  std::string md = calibration_markdown(set, rows);
  EXPECT_NE(md.find("2 of 2 calibration configs ran; mean |error| over them 3.7% (the bar: 5%); 2 "
                    "of 2 within 10%"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("\n## Notes\n\nWhy the MoE row misses.\n"), std::string::npos) << md;
}

TEST(CalibrationMarkdown, InconsistentPointsStayOutOfTheStatistics) {
  MeasuredSet set = parse_measured(
      std::string(kMeasured) + "    inconsistent: \"needs 110% of peak\"\n", "m.yaml");
  ASSERT_EQ(set.points.size(), 2u);
  EXPECT_TRUE(set.points[0].inconsistent.empty());
  EXPECT_EQ(set.points[1].inconsistent, "needs 110% of peak");
  // Dense +5% counts; Moe at 0.25 / 0.5 - 1 = -50% is shown but not counted:
  // mean |error| 5.0% over 1 config, not (5 + 50) / 2 = 27.5%.
  std::vector<CalibrationRow> rows = {calibration_row(set.points[0], run_with(1.0, 4200, 0.4)),
                                      calibration_row(set.points[1], run_with(4.0, 1, 0.1))};
  std::string md = calibration_markdown(set, rows);
  EXPECT_NE(md.find("| Moe (inconsistent, not a target) | moe.yaml | steps_per_second | 0.5 | 0.25 "
                    "| -50.0% |"),
            std::string::npos)
      << md;
  EXPECT_NE(
      md.find("1 of 1 calibration configs ran; mean |error| over them 5.0% (the bar: 5%); 1 of 1 "
              "within 10%"),
      std::string::npos)
      << md;
  EXPECT_NE(md.find("- Moe: needs 110% of peak"), std::string::npos) << md;
}

TEST(CalibrationMarkdown, MarkdownTableWithVerdicts) {
  MeasuredSet set = parse_measured(std::string(kMeasured) + kChecks, "m.yaml");
  JobOutcome crashed;
  crashed.error = "exit 2 | bad";
  std::vector<CheckRow> checks = {
      check_row(set.checks[0], run_with_field("time_by_pass_s.recompute", 0.6)),
      check_row(set.checks[1], run_with_field("flops_utilization.layer_matmuls", 0.8)),
      check_row(set.checks[2], crashed)};
  std::string md = calibration_markdown(set, {}, checks);
  EXPECT_NE(md.find("## Other measured numbers"), std::string::npos) << md;
  EXPECT_NE(
      md.find("| Moe | remat share | `time_by_pass_s.recompute` / step | 0.28 | 0.3 | +7.1% |"),
      std::string::npos)
      << md;
  // Pipes in text would split the markdown cell.
  EXPECT_NE(md.find("| Moe | layer matmuls / of peak | `flops_utilization.layer_matmuls` | >= 0.85 "
                    "| 0.8 | does not hold |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| Dense | GSPMD utilization | `mfu` | 0.5 to 0.62 | failed | exit 2 / bad |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("2 of 3 checks ran; 1 of the 2 independent ones hold"), std::string::npos)
      << md;
}

// A check that chose a parameter's value is shown with what it chose and not
// counted: of the remat share (holds) and the matmul bound (chose, met at
// 0.9), 1 of the 1 independent checks holds.
TEST(CalibrationMarkdown, ACheckThatChoseAParameterIsShownNotCounted) {
  std::string text = std::string(kMeasured) + kChecks;
  text.replace(text.find("    at_least: 0.85\n"), 19,
               "    at_least: 0.85\n    chose: core.mxu_sustained_fraction\n");
  MeasuredSet set = parse_measured(text, "m.yaml");
  ASSERT_EQ(set.checks[1].chose, "core.mxu_sustained_fraction");
  std::vector<CheckRow> checks = {
      check_row(set.checks[0], run_with_field("time_by_pass_s.recompute", 0.56)),
      check_row(set.checks[1], run_with_field("flops_utilization.layer_matmuls", 0.9))};
  std::string md = calibration_markdown(set, {}, checks);
  EXPECT_NE(md.find("holds; chose core.mxu_sustained_fraction, not counted"), std::string::npos)
      << md;
  EXPECT_NE(md.find("2 of 2 checks ran; 1 of the 1 independent ones hold"), std::string::npos)
      << md;
}

// The time split: shares of a 2 s step (1.5 s MXU-bound = 75%, 0.2 s
// exposed = 10%), HFU 0.6 and, at +20% error, a measured HFU of 0.6 / 1.2 = 50%;
// 8 GiB of 16 GiB.
TEST(CalibrationMarkdown, WhereTheTimeGoes) {
  MeasuredSet set = parse_measured(kMeasured, "m.yaml");
  JobOutcome run = run_with(2.0, 4800, 0.4);
  run.metrics.set("hardware", "tpuv5e");
  run.metrics.set("time_breakdown_s.mxu_bound", "1.5");
  run.metrics.set("time_breakdown_s.exposed_communication", "0.2");
  run.metrics.set("time_by_pass_s.forward", "0.5");
  run.metrics.set("time_by_pass_s.recompute", "0.5");
  run.metrics.set("time_by_pass_s.backward", "1");
  run.metrics.set("hfu", "0.6");
  run.metrics.set("peak_memory_bytes", fmt::format("{}", 8.0 * (1 << 30)));
  run.metrics.set("hbm_capacity_bytes", fmt::format("{}", 16.0 * (1 << 30)));
  CalibrationRow row = calibration_row(set.points[0], run);
  ASSERT_TRUE(row.ok);
  EXPECT_DOUBLE_EQ(row.split.mxu_bound, 0.75);
  EXPECT_DOUBLE_EQ(row.split.exposed_communication, 0.1);
  const std::string md = calibration_markdown(set, {row});
  EXPECT_NE(md.find("| Dense | tpuv5e | 75% | "), std::string::npos) << md;
  EXPECT_NE(md.find("| 10% | 25% / 25% / 50% | 60.0% | 50.0% | 8.0 / 16.0 GiB |"),
            std::string::npos)
      << md;
}

// The by-generation table: Dense on tpuv4 at 5000 / 4000 - 1 = +25%, Moe on
// tpuv5e at 1 / 2 s = 0.5 steps/s = measured (0%). Shares of the mean over
// the 2 target rows: 25 / 2 = 12.5 points and 0; they add up to the mean,
// 12.5%. One generation alone gets no table.
TEST(CalibrationMarkdown, ByGenerationSharesAddUpToTheMean) {
  MeasuredSet set = parse_measured(kMeasured, "m.yaml");
  JobOutcome dense = run_with(1.0, 5000, 0.4);
  dense.metrics.set("hardware", "tpuv4");
  JobOutcome moe = run_with(2.0, 1, 0.1);
  moe.metrics.set("hardware", "tpuv5e");
  const std::vector<CalibrationRow> rows = {calibration_row(set.points[0], dense),
                                            calibration_row(set.points[1], moe)};
  const std::string md = calibration_markdown(set, rows);
  EXPECT_NE(md.find("mean |error| over them 12.5%"), std::string::npos) << md;
  EXPECT_NE(md.find("| tpuv4 | 1 | 0 | 25.0% | +25.0% .. +25.0% | 12.5 points |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| tpuv5e | 1 | 1 | 0.0% | +0.0% .. +0.0% | 0.0 points |"), std::string::npos)
      << md;
  moe.metrics.set("hardware", "tpuv4");
  const std::string one = calibration_markdown(
      set, {calibration_row(set.points[0], dense), calibration_row(set.points[1], moe)});
  EXPECT_EQ(one.find("By generation"), std::string::npos) << one;
}

// The fit page names the command that made it, with a search limit other
// than the default.
TEST(CalibrationMarkdown, FitPageNamesItsSearchLimit) {
  MeasuredSet set = parse_measured(kMeasured, "m.yaml");
  FitResult result;
  result.max_evaluations = FitOptions{}.max_evaluations;
  EXPECT_NE(fit_markdown(set, result).find("`podsim calibrate --fit -o docs/calibration-fit.md`"),
            std::string::npos);
  result.max_evaluations = 60;
  EXPECT_NE(fit_markdown(set, result)
                .find("`podsim calibrate --fit --max-evaluations 60 -o docs/calibration-fit.md`"),
            std::string::npos);
}

}  // namespace
}  // namespace podsim::studies
