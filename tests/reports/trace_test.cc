// Chrome trace export: valid JSON with process/thread metadata per device
// and track, complete events in microseconds, deterministic bytes.
#include <gtest/gtest.h>

#include <map>

#include "reports/trace.h"

namespace podsim::reports {
namespace {

sim::TraceEvent event(int64_t device, const char* track, const char* name, double start_s, double duration_s) {
  return sim::TraceEvent{device, track, name, start_s, duration_s, {{"op_name", "fwd/x"}, {"bytes", "4096"}}};
}

sim::Timeline two_device_timeline() {
  sim::Timeline t;
  t.fidelity = sim::Fidelity::kFull;
  t.devices = 2;
  t.step_time_s = 1.0;
  // Deliberately not in track order: the exporter orders tracks itself.
  t.events = {event(0, "ici 0->1", "all-reduce.4 leg", 0.6, 0.1), event(0, "compute", "dot.1", 0.0, 0.5),
              event(0, "collectives", "all-reduce.4", 0.5, 0.25), event(0, "compute", "add.2", 0.5, 0.001),
              event(1, "compute", "dot.1", 0.0, 0.5)};
  return t;
}

TEST(Trace, ParsesAndHasOneThreadPerDeviceTrackInFixedOrder) {
  nlohmann::json j = nlohmann::json::parse(trace_json(two_device_timeline(), "w"));
  ASSERT_TRUE(j.at("traceEvents").is_array());
  std::map<std::pair<int64_t, int64_t>, std::string> thread_names;
  int processes = 0, complete = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name")
      thread_names[{e["pid"].get<int64_t>(), e["tid"].get<int64_t>()}] = e["args"]["name"].get<std::string>();
    if (e["ph"] == "M" && e["name"] == "process_name") ++processes;
    if (e["ph"] == "X") ++complete;
  }
  EXPECT_EQ(processes, 2);
  EXPECT_EQ(complete, 5);
  ASSERT_EQ(thread_names.size(), 4u);  // device 0: three tracks, device 1: one
  EXPECT_EQ((thread_names[{0, 1}]), "compute");
  EXPECT_EQ((thread_names[{0, 2}]), "collectives");
  EXPECT_EQ((thread_names[{0, 3}]), "ici 0->1");
  EXPECT_EQ((thread_names[{1, 1}]), "compute");
}

TEST(Trace, CompleteEventsAreInMicrosecondsOnTheirTrackWithArgs) {
  nlohmann::json j = nlohmann::json::parse(trace_json(two_device_timeline(), "w"));
  bool found = false;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X" || e["name"] != "all-reduce.4") continue;
    found = true;
    EXPECT_EQ(e["pid"].get<int64_t>(), 0);
    EXPECT_EQ(e["tid"].get<int64_t>(), 2);                   // the collectives track
    EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 500000.0);      // 0.5 s = 5e5 us
    EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 250000.0);     // 0.25 s
    EXPECT_EQ(e["args"]["op_name"], "fwd/x");
    EXPECT_EQ(e["args"]["bytes"], "4096");
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(j["otherData"]["fidelity"], "full");
}

TEST(Trace, SameTimelineGivesIdenticalBytes) {
  EXPECT_EQ(trace_json(two_device_timeline(), "w"), trace_json(two_device_timeline(), "w"));
}

TEST(Trace, EmptyTimelineIsStillAValidTrace) {
  nlohmann::json j = nlohmann::json::parse(trace_json(sim::Timeline{}, "w"));
  EXPECT_TRUE(j["traceEvents"].empty());
}

}  // namespace
}  // namespace podsim::reports
