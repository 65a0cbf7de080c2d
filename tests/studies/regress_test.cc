// Regression baselines (studies/regress.h): parsing, tolerance arithmetic,
// update, the change table, finding the shipped baselines.
#include "studies/regress.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include <unistd.h>

#include "common/error.h"

namespace podsim::studies {
namespace {

const char* kBaseline = R"({
  "workload": "../../workloads/small.yaml",
  "overrides": ["training.remat=none"],
  "fidelity": "fast",
  "metrics": {
    "step_time_s": {"value": 2.0, "rel_tol": 0.01},
    "exposed": {"value": 0.0, "rel_tol": 0.05, "abs_tol": 1e-6},
    "parameters": {"value": 100, "rel_tol": 0},
    "fits_in_memory": {"value": true},
    "remat": {"value": "none"}
  }
})";

JobOutcome run_with(reports::FlatReport fields) {
  JobOutcome run;
  run.ok = true;
  run.metrics = std::move(fields);
  return run;
}

JobOutcome matching_run() {
  return run_with({{"step_time_s", "2.0"},
                   {"exposed", "0"},
                   {"parameters", "100"},
                   {"fits_in_memory", "true"},
                   {"remat", "none"}});
}

TEST(RegressTest, ParsesBaselineAndResolvesWorkloadAgainstItsFolder) {
  Baseline b = parse_baseline(kBaseline, "/repo/reports/baselines/small.json");
  EXPECT_EQ(b.workload_path, "/repo/workloads/small.yaml");
  ASSERT_EQ(b.overrides.size(), 1u);
  EXPECT_EQ(b.overrides[0], "training.remat=none");
  ASSERT_EQ(b.metrics.size(), 5u);
  EXPECT_EQ(b.metrics[0].name, "step_time_s");
  EXPECT_DOUBLE_EQ(*b.metrics[0].number, 2.0);
  EXPECT_DOUBLE_EQ(b.metrics[0].rel_tol, 0.01);
  EXPECT_DOUBLE_EQ(b.metrics[1].abs_tol, 1e-6);
  EXPECT_FALSE(b.metrics[3].number.has_value());
  EXPECT_EQ(b.metrics[3].text, "true");
}

TEST(RegressTest, MalformedBaselinesAreUserErrorsNamingTheFile) {
  EXPECT_THROW(parse_baseline("{", "b.json"), UserError);
  EXPECT_THROW(parse_baseline(R"({"metrics": {"a": {"value": 1}}})", "b.json"),
               UserError);                                                         // no workload
  EXPECT_THROW(parse_baseline(R"({"workload": "w.yaml"})", "b.json"), UserError);  // no metrics
  EXPECT_THROW(
      parse_baseline(R"({"workload": "w.yaml", "metrics": {"a": {"value": 1, "rel_tol": -1}}})",
                     "b.json"),
      UserError);
  EXPECT_THROW(
      parse_baseline(
          R"({"workload": "w.yaml", "overrides": ["noequals"], "metrics": {"a": {"value": 1}}})",
          "b.json"),
      UserError);
  try {
    parse_baseline("[]", "dir/b.json");
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("dir/b.json"), std::string::npos);
  }
}

TEST(RegressTest, IdenticalRunPasses) {
  Baseline b = parse_baseline(kBaseline, "b.json");
  BaselineComparison c = compare_with_baseline(b, matching_run());
  EXPECT_TRUE(c.passed());
  ASSERT_EQ(c.metrics.size(), 5u);
}

TEST(RegressTest, ToleranceIsRelativeToTheBaselineValue) {
  Baseline b = parse_baseline(kBaseline, "b.json");
  JobOutcome run = matching_run();
  // rel_tol 0.01 of 2.0 = 0.02: 2.019 is inside, 2.021 outside (+1.05%).
  run.metrics.set("step_time_s", "2.019");
  EXPECT_TRUE(compare_with_baseline(b, run).passed());
  run.metrics.set("step_time_s", "2.021");
  BaselineComparison c = compare_with_baseline(b, run);
  EXPECT_FALSE(c.passed());
  EXPECT_FALSE(c.metrics[0].within_tolerance);
  EXPECT_NEAR(c.metrics[0].relative_change, 0.021 / 2.0, 1e-12);
}

TEST(RegressTest, AbsoluteToleranceCoversZeroBaselines) {
  Baseline b = parse_baseline(kBaseline, "b.json");
  JobOutcome run = matching_run();
  run.metrics.set("exposed", "5e-7");  // |5e-7 - 0| <= abs_tol 1e-6
  EXPECT_TRUE(compare_with_baseline(b, run).passed());
  run.metrics.set("exposed", "2e-6");
  EXPECT_FALSE(compare_with_baseline(b, run).passed());
}

TEST(RegressTest, ExactMetricsAndTextMetricsMustMatch) {
  Baseline b = parse_baseline(kBaseline, "b.json");
  JobOutcome run = matching_run();
  run.metrics.set("parameters", "101");  // rel_tol 0
  EXPECT_FALSE(compare_with_baseline(b, run).passed());
  run = matching_run();
  run.metrics.set("remat", "full");
  EXPECT_FALSE(compare_with_baseline(b, run).passed());
  run = matching_run();
  run.metrics.remove("fits_in_memory");  // fits_in_memory missing
  BaselineComparison c = compare_with_baseline(b, run);
  EXPECT_FALSE(c.passed());
  EXPECT_EQ(c.metrics[3].actual, "(missing)");
}

TEST(RegressTest, TheSameNumberWrittenDifferentlyIsNoChange) {
  // The report writes 100.0 where the baseline stored 100: equal values,
  // shown as the baseline writes them and with an empty change column;
  // a text metric that differs is "changed".
  Baseline b = parse_baseline(kBaseline, "b.json");
  JobOutcome run = matching_run();
  run.metrics.set("parameters", "100.0");
  run.metrics.set("remat", "full");
  const BaselineComparison c = compare_with_baseline(b, run);
  EXPECT_TRUE(c.metrics[2].within_tolerance);
  EXPECT_EQ(c.metrics[2].actual, "100");
  const std::string table = regress_table({c}, /*all_rows=*/true);
  const auto parameters_row =
      table.substr(table.find("parameters"),
                   table.find('\n', table.find("parameters")) - table.find("parameters"));
  EXPECT_EQ(parameters_row.find("changed"), std::string::npos) << parameters_row;
  const auto remat_row = table.substr(table.find("remat"));
  EXPECT_NE(remat_row.find("changed"), std::string::npos) << remat_row;
}

TEST(RegressTest, FailedRunFailsTheBaselineAndShowsTheError) {
  Baseline b = parse_baseline(kBaseline, "dir/b.json");
  JobOutcome run;
  run.ok = false;
  run.error = "crashed with signal 11";
  BaselineComparison c = compare_with_baseline(b, run);
  EXPECT_FALSE(c.passed());
  std::string table = regress_table({c});
  EXPECT_NE(table.find("b.json"), std::string::npos);
  EXPECT_NE(table.find("crashed with signal 11"), std::string::npos);
  EXPECT_NE(table.find("0 passed, 1 failed"), std::string::npos);
  EXPECT_THROW(updated_baseline(b, run), UserError);
}

TEST(RegressTest, TableListsOnlyChangedMetricsUnlessAllRows) {
  Baseline b = parse_baseline(kBaseline, "b.json");
  JobOutcome run = matching_run();
  run.metrics.set("step_time_s", "2.5");  // +25%
  BaselineComparison c = compare_with_baseline(b, run);
  std::string table = regress_table({c});
  EXPECT_NE(table.find("step_time_s"), std::string::npos);
  EXPECT_NE(table.find("+25.000%"), std::string::npos);
  EXPECT_NE(table.find("CHANGED: slower"), std::string::npos) << table;  // a longer step
  EXPECT_EQ(table.find("parameters"), std::string::npos);
  EXPECT_NE(regress_table({c}, true).find("parameters"), std::string::npos);
}

// A 13 % shorter step is a change to review, and the table says it is a
// speed-up, not a regression.
TEST(RegressTest, ChangesSayWhichWayTheyWent) {
  Baseline b = parse_baseline(kBaseline, "b.json");
  JobOutcome run = matching_run();
  run.metrics.set("step_time_s", "1.74");  // step_time_s 2 -> 1.74: -13 %
  BaselineComparison c = compare_with_baseline(b, run);
  EXPECT_FALSE(c.passed());
  std::string table = regress_table({c});
  EXPECT_NE(table.find("-13.000%"), std::string::npos) << table;
  EXPECT_NE(table.find("CHANGED: faster"), std::string::npos) << table;
  EXPECT_EQ(table.find("REGRESSION"), std::string::npos) << table;
}

TEST(RegressTest, UpdateTakesTheRunsValuesKeepsTolerancesAndRoundTrips) {
  Baseline b = parse_baseline(kBaseline, "b.json");
  JobOutcome run = matching_run();
  run.metrics.set("step_time_s", "2.5");
  run.metrics.set("remat", "full");
  Baseline updated = updated_baseline(b, run);
  EXPECT_TRUE(compare_with_baseline(updated, run).passed());
  Baseline reread = parse_baseline(baseline_json(updated), "b.json");
  ASSERT_EQ(reread.metrics.size(), b.metrics.size());
  EXPECT_DOUBLE_EQ(*reread.metrics[0].number, 2.5);
  EXPECT_DOUBLE_EQ(reread.metrics[0].rel_tol, 0.01);
  EXPECT_DOUBLE_EQ(reread.metrics[1].abs_tol, 1e-6);
  EXPECT_EQ(reread.metrics[3].text, "true");
  EXPECT_EQ(reread.metrics[4].text, "full");
  EXPECT_EQ(reread.overrides, b.overrides);
  EXPECT_EQ(reread.workload, b.workload);
}

TEST(RegressTest, ShippedBaselinesParseAndNameExistingWorkloads) {
  std::string dir = std::string(PODSIM_SOURCE_DIR) + "/reports/baselines";
  std::vector<std::string> files = baseline_files(dir);
  ASSERT_FALSE(files.empty());
  for (const std::string& f : files) {
    Baseline b = load_baseline(f);
    EXPECT_TRUE(std::filesystem::exists(b.workload_path)) << f << " -> " << b.workload_path;
  }
}

// regress and calibrate find the shipped baselines from any directory: the
// working directory's reports/baselines first, else the one in the tree
// around the executable (build/cli/podsim -> <repo>/reports/baselines).
TEST(FindBaselinesDir, WorkingDirectoryFirstThenUpwardFromTheExecutable) {
  namespace fs = std::filesystem;
  const fs::path root =
      fs::temp_directory_path() / ("podsim_find_baselines_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "repo" / "reports" / "baselines");
  fs::create_directories(root / "repo" / "build" / "cli");
  fs::create_directories(root / "elsewhere");
  fs::create_directories(root / "other" / "reports" / "baselines");
  const std::string exe = (root / "repo" / "build" / "cli" / "podsim").string();
  EXPECT_EQ(find_baselines_dir(exe, (root / "elsewhere").string()),
            (root / "repo" / "reports" / "baselines").string());
  EXPECT_EQ(find_baselines_dir(exe, (root / "other").string()),
            (root / "other" / "reports" / "baselines").string());
  EXPECT_EQ(
      find_baselines_dir((root / "elsewhere" / "podsim").string(), (root / "elsewhere").string()),
      "");
  EXPECT_EQ(find_baselines_dir("", (root / "elsewhere").string()), "");
  fs::remove_all(root);
}

}  // namespace
}  // namespace podsim::studies
