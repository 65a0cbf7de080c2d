// The flat report value and the fixed report columns (reports/flat_report.h).
#include "reports/flat_report.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "reports/formats.h"

namespace podsim::reports {
namespace {

TEST(FlatReport, ReadsReportCsvHeaderAndRow) {
  const FlatReport fields = FlatReport::from_csv("a,b,c\n1,\"x,y\",3\n");
  ASSERT_EQ(fields.size(), 3u);
  EXPECT_EQ(fields.fields()[1].first, "b");
  EXPECT_EQ(fields.fields()[1].second, "x,y");
  EXPECT_EQ(fields.keys(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(FlatReport::from_csv("").empty());
  EXPECT_TRUE(FlatReport::from_csv("a,b\n1\n").empty());         // ragged
  EXPECT_TRUE(FlatReport::from_csv("a,b\n1,2\n3,4\n").empty());  // two rows
  EXPECT_TRUE(FlatReport::from_csv("a,\"b\n").empty());          // unclosed quote
}

TEST(FlatReport, CsvRoundTripsAndQuotesWhatNeedsIt) {
  const FlatReport report{{"workload", "small"}, {"notes", "a, \"b\""}, {"step_time_s", "0.5"}};
  EXPECT_EQ(report.csv(), "workload,notes,step_time_s\nsmall,\"a, \"\"b\"\"\",0.5\n");
  EXPECT_EQ(FlatReport::from_csv(report.csv()), report);
}

TEST(FlatReport, NumbersAreWholeNumberTexts) {
  const FlatReport report{
      {"step", "1e-3"}, {"bad", "12abc"}, {"empty", ""}, {"word", "true"}, {"step", "7"}};
  EXPECT_DOUBLE_EQ(report.number("step").value(), 1e-3);  // the first field of that name
  EXPECT_FALSE(report.number("bad").has_value());
  EXPECT_FALSE(report.number("empty").has_value());
  EXPECT_FALSE(report.number("word").has_value());
  EXPECT_FALSE(report.number("missing").has_value());
  EXPECT_EQ(report.text("word"), "true");
  EXPECT_EQ(report.text("empty"), "");
  EXPECT_FALSE(report.text("missing").has_value());
}

TEST(FlatReport, SetReplacesOrAppendsAndRemoveDrops) {
  FlatReport report{{"a", "1"}, {"b", "2"}};
  report.set("a", "3");
  report.set("c", "4");
  EXPECT_EQ(report, (FlatReport{{"a", "3"}, {"b", "2"}, {"c", "4"}}));
  report.remove("b");
  EXPECT_EQ(report.keys(), (std::vector<std::string>{"a", "c"}));
}

TEST(FlatReport, JsonIsOneObjectInFieldOrder) {
  const FlatReport report{{"z", "1"}, {"a", "x"}};
  EXPECT_EQ(report.json().dump(), R"({"z":"1","a":"x"})");
  EXPECT_EQ(FlatReport().json().dump(), "{}");
}

TEST(FlatReport, ReportCsvIsTheFlatFormsCsv) {
  Report r;
  r.workload = "w";
  EXPECT_EQ(report_csv(r), report_flat_fields(r).csv());
  EXPECT_EQ(FlatReport::from_csv(report_csv(r)), report_flat_fields(r));
}

TEST(FlatReport, ReportColumnsAreTheFlatReportKeys) {
  std::vector<std::string> columns = report_columns();
  ASSERT_FALSE(columns.empty());
  EXPECT_EQ(columns[0], "workload");
  EXPECT_NE(std::find(columns.begin(), columns.end(), "step_time_s"), columns.end());
  // Every collective kind and memory role has its columns, zeros included.
  EXPECT_NE(std::find(columns.begin(), columns.end(), "collectives.all-to-all.count"),
            columns.end());
  EXPECT_NE(std::find(columns.begin(), columns.end(), "memory_breakdown_bytes.collective_buffers"),
            columns.end());
}

}  // namespace
}  // namespace podsim::reports
