// The parameter scale behind `podsim calibrate --fit` (studies/fit.h), and
// the `fit:` list of the measured-numbers file. The fit against real runs is
// tested in tests/cli/calibrate_fit_cli_test.cc.
#include "studies/fit.h"

#include <gtest/gtest.h>

#include <cmath>

#include "common/error.h"

namespace podsim::studies {
namespace {

TEST(FitScale, StepsInRatiosOfTheRange) {
  FitParameter p{"core.op_overhead_s", 1e-7, 1e-5, "test"};
  // low * (high/low)^u: the middle of two decades is one decade up.
  EXPECT_NEAR(fit_value_at(p, 0.5), 1e-6, 1e-18);
  EXPECT_DOUBLE_EQ(fit_value_at(p, 0), 1e-7);
  EXPECT_NEAR(fit_value_at(p, 1), 1e-5, 1e-18);
  EXPECT_NEAR(fit_unit_of(p, 1e-6), 0.5, 1e-12);
  EXPECT_NEAR(fit_unit_of(p, fit_value_at(p, 0.3)), 0.3, 1e-12);
  // Outside the range: clamped to its ends.
  EXPECT_DOUBLE_EQ(fit_unit_of(p, 1e-9), 0.0);
  EXPECT_DOUBLE_EQ(fit_unit_of(p, 1.0), 1.0);
  EXPECT_NEAR(fit_value_at(p, 7.0), 1e-5, 1e-18);
}

const char* kPoints = R"(points:
  - config: A
    workload: a.yaml
    metric: steps_per_second
    measured: 1
)";

TEST(FitList, ParsesKeysRangesAndReasons) {
  MeasuredSet set = parse_measured(std::string(kPoints) + R"(fit:
  - key: core.op_overhead_s
    range: [0.2e-6, 5e-6]
    why: "kernel issue cost"
  - key: ici.link_efficiency
    range: [0.7, 1.0]
    why: measured fraction
)",
                                   "m.yaml");
  ASSERT_EQ(set.fit.size(), 2u);
  EXPECT_EQ(set.fit[0].key, "core.op_overhead_s");
  EXPECT_DOUBLE_EQ(set.fit[0].low, 0.2e-6);
  EXPECT_DOUBLE_EQ(set.fit[0].high, 5e-6);
  EXPECT_EQ(set.fit[0].why, "kernel issue cost");
  EXPECT_EQ(set.fit[1].key, "ici.link_efficiency");
}

// The error's text for a bad fit list ("" when it parses).
std::string fit_error(const std::string& fit_yaml) {
  try {
    parse_measured(std::string(kPoints) + fit_yaml, "m.yaml");
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(FitList, BadEntriesArePositionedErrors) {
  // Line 6 is the first line after kPoints' five.
  const std::string unknown_key =
      fit_error("fit:\n  - key: core.warp_drive\n    range: [1, 2]\n    why: x\n");
  EXPECT_NE(unknown_key.find("m.yaml:7:10"), std::string::npos) << unknown_key;
  EXPECT_NE(unknown_key.find("not a hardware key"), std::string::npos) << unknown_key;
  EXPECT_NE(fit_error("fit:\n  - key: hbm.latency_s\n    range: [0, 2e-6]\n    why: x\n")
                .find("0 < low < high"),
            std::string::npos);
  EXPECT_NE(fit_error("fit:\n  - key: hbm.latency_s\n    range: [2e-6, 1e-6]\n    why: x\n")
                .find("0 < low < high"),
            std::string::npos);
  EXPECT_NE(fit_error("fit:\n  - key: hbm.latency_s\n    range: [1e-6]\n    why: x\n")
                .find("range: [low, high]"),
            std::string::npos);
  EXPECT_NE(
      fit_error("fit:\n  - key: hbm.latency_s\n    range: [1e-7, 1e-6]\n").find("needs 'why'"),
      std::string::npos);
  EXPECT_NE(fit_error("fit:\n  - key: hbm.latency_s\n    range: [1e-7, 1e-6]\n    why: x\n"
                      "  - key: hbm.latency_s\n    range: [1e-7, 1e-6]\n    why: y\n")
                .find("listed twice"),
            std::string::npos);
  EXPECT_NE(fit_error("fit: 3\n").find("'fit' must be a list"), std::string::npos);
  EXPECT_EQ(fit_error("fit:\n  - key: hbm.latency_s\n    range: [1e-7, 1e-6]\n    why: x\n"), "");
}

}  // namespace
}  // namespace podsim::studies
