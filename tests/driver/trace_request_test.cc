// --trace flags -> TraceRequest (driver/trace_request.h).
#include "driver/trace_request.h"

#include <gtest/gtest.h>

#include <cmath>

#include "common/error.h"
#include "reports/trace.h"

namespace podsim::driver {
namespace {

TEST(TraceRequest, DevicesAreAListASampleOrAll) {
  sim::TraceSelection list;
  parse_trace_devices("0,5,17", list);
  EXPECT_EQ(list.devices, (std::vector<int64_t>{0, 5, 17}));
  sim::TraceSelection sample;
  parse_trace_devices("sample:4", sample);
  EXPECT_EQ(sample.sample, 4);
  EXPECT_TRUE(sample.devices.empty());
  sim::TraceSelection all;
  parse_trace_devices("all", all);
  EXPECT_TRUE(all.devices.empty());
  EXPECT_EQ(all.sample, 0);
  sim::TraceSelection bad;
  EXPECT_THROW(parse_trace_devices("0,x", bad), UserError);
  EXPECT_THROW(parse_trace_devices("-1", bad), UserError);
  EXPECT_THROW(parse_trace_devices("sample:0", bad), UserError);
}

TEST(TraceRequest, WindowIsMillisecondsWithOpenSides) {
  sim::TraceSelection both;
  parse_trace_window("10:50", both);
  EXPECT_DOUBLE_EQ(both.window_begin_s, 0.010);
  EXPECT_DOUBLE_EQ(both.window_end_s, 0.050);
  EXPECT_TRUE(both.window_given);
  sim::TraceSelection open_end;
  parse_trace_window("5:", open_end);
  EXPECT_DOUBLE_EQ(open_end.window_begin_s, 0.005);
  EXPECT_TRUE(std::isinf(open_end.window_end_s));
  sim::TraceSelection none;
  parse_trace_window("", none);
  EXPECT_FALSE(none.window_given);
  sim::TraceSelection bad;
  EXPECT_THROW(parse_trace_window("50", bad), UserError);
  EXPECT_THROW(parse_trace_window("50:10", bad), UserError);
  EXPECT_THROW(parse_trace_window("a:10", bad), UserError);
}

TEST(TraceRequest, LimitBecomesAnEventCount) {
  EXPECT_EQ(parse_trace_limit(""), reports::kDefaultTraceLimitBytes);
  EXPECT_EQ(parse_trace_limit("0"), 0);
  EXPECT_EQ(parse_trace_limit("none"), 0);
  // 2 MB at reports::kTraceBytesPerItem = 400 bytes an item: 5000 events.
  const std::optional<TraceRequest> trace = parse_trace_flags({"t.json", "", "", "2MB"});
  ASSERT_TRUE(trace.has_value());
  EXPECT_EQ(trace->limit_bytes, 2e6);
  EXPECT_EQ(trace->selection.max_events, 5000);
  EXPECT_EQ(trace->selection.bytes_per_item, reports::kTraceBytesPerItem);
  const std::optional<TraceRequest> unlimited = parse_trace_flags({"t.json", "", "", "0"});
  ASSERT_TRUE(unlimited.has_value());
  EXPECT_EQ(unlimited->selection.max_events, 0);
}

TEST(TraceRequest, SelectionFlagsNeedTrace) {
  EXPECT_FALSE(parse_trace_flags({}).has_value());
  EXPECT_THROW(parse_trace_flags({"", "0,1", "", ""}), UserError);
  EXPECT_THROW(parse_trace_flags({"", "", "0:5", ""}), UserError);
  EXPECT_THROW(parse_trace_flags({"", "", "", "20MB"}), UserError);
}

}  // namespace
}  // namespace podsim::driver
