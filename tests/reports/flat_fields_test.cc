// report_columns and parse_report_csv (reports/flat_fields.h).
#include "reports/flat_fields.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace podsim::reports {
namespace {

TEST(FlatFields, ParsesReportCsvHeaderAndRow) {
  auto fields = parse_report_csv("a,b,c\n1,\"x,y\",3\n");
  ASSERT_EQ(fields.size(), 3u);
  EXPECT_EQ(fields[1].first, "b");
  EXPECT_EQ(fields[1].second, "x,y");
  EXPECT_TRUE(parse_report_csv("").empty());
  EXPECT_TRUE(parse_report_csv("a,b\n1\n").empty());  // ragged
}

TEST(FlatFields, ReportColumnsAreTheFlatReportKeys) {
  std::vector<std::string> columns = report_columns();
  ASSERT_FALSE(columns.empty());
  EXPECT_EQ(columns[0], "workload");
  EXPECT_NE(std::find(columns.begin(), columns.end(), "step_time_s"), columns.end());
  // Every collective kind and memory role has its columns, zeros included.
  EXPECT_NE(std::find(columns.begin(), columns.end(), "collectives.all-to-all.count"), columns.end());
  EXPECT_NE(std::find(columns.begin(), columns.end(), "memory_breakdown_bytes.collective_buffers"), columns.end());
}

}  // namespace
}  // namespace podsim::reports
