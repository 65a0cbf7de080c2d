// Calibration (studies/calibration.h): the measured-numbers file, the
// predicted metric and error arithmetic, the checks' verdicts.
#include "studies/calibration.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "common/error.h"
#include "tests/studies/measured_fixture.h"

namespace podsim::studies {
namespace {

using namespace measured_fixture;

TEST(CalibrationTest, ParsesPointsAndResolvesPaths) {
  MeasuredSet set = parse_measured(kMeasured, "/repo/reports/baselines/measured.yaml");
  ASSERT_EQ(set.points.size(), 2u);
  EXPECT_EQ(set.source, "measurements.md");
  EXPECT_EQ(set.points[0].workload_path, "/repo/reports/w/dense.yaml");
  EXPECT_EQ(set.points[1].workload_path, "/abs/moe.yaml");
  EXPECT_DOUBLE_EQ(set.points[1].measured, 0.5);
  EXPECT_EQ(set.points[1].source, "measurements.md MoE table");
}

TEST(CalibrationTest, BadFilesArePositionedUserErrors) {
  EXPECT_THROW(parse_measured("points: []\n", "m.yaml"), UserError);
  EXPECT_THROW(parse_measured(
                   "points:\n  - config: a\n    workload: w\n    metric: flops\n    measured: 1\n",
                   "m.yaml"),
               UserError);
  try {
    parse_measured(
        "points:\n  - config: a\n    workload: w\n    metric: steps_per_second\n    measured: "
        "fast\n",
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

TEST(CalibrationTest, MfuPointsReadTheReportsMfu) {
  MeasuredSet set = parse_measured(
      "points:\n  - config: M\n    workload: w.yaml\n    metric: mfu\n    measured: 0.5\n",
      "m.yaml");
  // Predicted = the report's mfu field: 0.55 / 0.5 - 1 = +10%.
  CalibrationRow row = calibration_row(set.points[0], run_with(3.0, 77, 0.55));
  ASSERT_TRUE(row.ok);
  EXPECT_DOUBLE_EQ(row.predicted, 0.55);
  EXPECT_NEAR(row.relative_error, 0.1, 1e-12);
}

TEST(CalibrationChecks, ParsedWithKindsAndPaths) {
  MeasuredSet set =
      parse_measured(std::string(kMeasured) + kChecks, "/repo/reports/baselines/measured.yaml");
  ASSERT_EQ(set.checks.size(), 3u);
  EXPECT_EQ(set.checks[0].kind, MeasuredCheck::Kind::kValue);
  EXPECT_TRUE(set.checks[0].per_step);
  EXPECT_DOUBLE_EQ(set.checks[0].measured, 0.28);
  EXPECT_EQ(set.checks[0].workload_path, "/repo/reports/w/moe.yaml");
  EXPECT_EQ(set.checks[1].kind, MeasuredCheck::Kind::kAtLeast);
  EXPECT_FALSE(set.checks[1].per_step);
  EXPECT_EQ(set.checks[2].kind, MeasuredCheck::Kind::kRange);
  EXPECT_DOUBLE_EQ(set.checks[2].low, 0.50);
  EXPECT_DOUBLE_EQ(set.checks[2].high, 0.62);
}

TEST(CalibrationChecks, BadChecksArePositionedUserErrors) {
  const std::string head =
      std::string(kMeasured) + "checks:\n  - config: a\n    workload: w\n    quantity: q\n";
  auto message = [&head](const std::string& rest) {
    try {
      parse_measured(head + rest, "m.yaml");
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  // Lines: kMeasured has 11, "checks:" is 12, the check starts on 13.
  EXPECT_NE(message("    field: not_a_field\n    measured: 1\n").find("m.yaml:16"),
            std::string::npos);
  EXPECT_NE(message("    field: mfu\n    measured: 1\n    at_least: 2\n").find("exactly one of"),
            std::string::npos);
  EXPECT_NE(message("    field: mfu\n").find("exactly one of"), std::string::npos);
  EXPECT_NE(message("    field: mfu\n    range: [0.6, 0.5]\n").find("low <= high"),
            std::string::npos);
  EXPECT_NE(message("    field: mfu\n    range: 0.5\n").find("[low, high]"), std::string::npos);
  EXPECT_NE(message("    field: mfu\n    at_least: most\n").find("m.yaml:17"), std::string::npos);
  EXPECT_NE(message("    field: mfu\n    per_step: maybe\n    measured: 1\n").find("true or false"),
            std::string::npos);
}

TEST(CalibrationChecks, VerdictsFollowTheKind) {
  MeasuredSet set = parse_measured(std::string(kMeasured) + kChecks, "m.yaml");
  // recompute 0.6 s of a 2 s step = 0.30 vs 0.28: 0.30/0.28 - 1 = +7.1%, within 15%.
  CheckRow remat = check_row(set.checks[0], run_with_field("time_by_pass_s.recompute", 0.6));
  ASSERT_TRUE(remat.ok);
  EXPECT_DOUBLE_EQ(remat.predicted, 0.3);
  EXPECT_NEAR(remat.relative_error, 0.30 / 0.28 - 1, 1e-12);
  EXPECT_TRUE(remat.holds);
  // 1.0 s of 2 s = 0.5: +78.6%, outside.
  EXPECT_FALSE(check_row(set.checks[0], run_with_field("time_by_pass_s.recompute", 1.0)).holds);
  // Lower bound: 0.9 >= 0.85 holds, 0.8 does not.
  EXPECT_TRUE(
      check_row(set.checks[1], run_with_field("flops_utilization.layer_matmuls", 0.9)).holds);
  EXPECT_FALSE(
      check_row(set.checks[1], run_with_field("flops_utilization.layer_matmuls", 0.8)).holds);
  // Range: run_with's mfu 0.55 is inside [0.50, 0.62].
  EXPECT_TRUE(check_row(set.checks[2], run_with(1.0, 1, 0.55)).holds);
  EXPECT_FALSE(check_row(set.checks[2], run_with(1.0, 1, 0.63)).holds);
  // A run without the field is an error row, not a verdict.
  CheckRow missing = check_row(set.checks[1], run_with(1.0, 1, 0.5));
  EXPECT_FALSE(missing.ok);
  EXPECT_NE(missing.error.find("flops_utilization.layer_matmuls"), std::string::npos);
}

// A published row: 100 TFLOP/s per chip on 4 chips of a model of
// F FLOPs per token (rule 6p of the workload's P) is 4e14 / F tokens/s;
// a prediction 10% above it is 110 TFLOP/s and 0.5 x 1.1 = 55% MFU.
TEST(CalibrationTest, PublishedRowsDeriveTokensPerSecondByTheirRule) {
  const std::string workload = std::string(PODSIM_SOURCE_DIR) + "/workloads/small.yaml";
  const std::string text = fmt::format(R"(points:
  - config: Published
    workload: {}
    metric: tokens_per_second
    flop_rule: 6p
    tflops_per_chip: 100
    mfu: 0.5
    chips: 4
)",
                                       workload);
  MeasuredSet set = parse_measured(text, "m.yaml");
  ASSERT_TRUE(set.points[0].published.has_value());
  const PublishedThroughput& t = *set.points[0].published;
  EXPECT_GT(t.flops_per_token, 0);
  EXPECT_DOUBLE_EQ(set.points[0].measured, 100e12 * 4 / t.flops_per_token);
  CalibrationRow row =
      calibration_row(set.points[0], run_with(1.0, 1.1 * set.points[0].measured, 0.4));
  ASSERT_TRUE(row.ok);
  EXPECT_NEAR(row.relative_error, 0.1, 1e-12);
  EXPECT_NEAR(row.predicted_tflops_per_chip, 110, 1e-9);
  EXPECT_NEAR(row.predicted_published_mfu, 0.55, 1e-12);
  // A published row derives `measured`: giving it too is an error at its line.
  try {
    parse_measured(text + "    measured: 5\n", "m.yaml");
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("m.yaml:9"), std::string::npos) << e.what();
  }
  // An unknown rule names the rules.
  try {
    std::string bad = text;
    bad.replace(bad.find("6p"), 2, "7p");
    parse_measured(bad, "m.yaml");
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("6p_attention"), std::string::npos) << e.what();
  }
}

TEST(CalibrationTest, ShippedMeasuredFileCoversEveryAnchorNumber) {
  // measurements.md: three Lingvo dense configs (tokens/s), two GShard MoE
  // configs (steps/s), the 128E one marked inconsistent, and MaxText's six
  // single-slice rows (v4 22B, v5e 16B and 64B, v5p 32B, 128B and 512B) and
  // eight multi-slice rows (v4 22B on 2/4/8 slices, v5e 16B on 2/4/8/16, v5p
  // 32B on 2), each a published TFLOP/s row compared on tokens/s.
  MeasuredSet set =
      load_measured(std::string(PODSIM_SOURCE_DIR) + "/reports/baselines/measured.yaml");
  ASSERT_EQ(set.points.size(), 19u);
  int tokens = 0, steps = 0, published = 0, inconsistent = 0;
  for (const MeasuredPoint& p : set.points) {
    (p.metric == "tokens_per_second" ? tokens : steps)++;
    if (p.published) ++published;
    if (!p.inconsistent.empty()) ++inconsistent;
    EXPECT_TRUE(std::filesystem::exists(p.workload_path)) << p.workload_path;
  }
  EXPECT_EQ(tokens, 17);
  EXPECT_EQ(steps, 2);
  EXPECT_EQ(published, 14);
  EXPECT_EQ(inconsistent, 1);
  // The other numbers: GShard's remat shares (36L, 60L), all-to-all shares
  // (128E, 2048E), kernel utilizations (matmuls, attention) and GSPMD's
  // utilization range.
  EXPECT_EQ(set.checks.size(), 7u);
  for (const MeasuredCheck& c : set.checks)
    EXPECT_TRUE(std::filesystem::exists(c.workload_path)) << c.workload_path;
}

}  // namespace
}  // namespace podsim::studies
