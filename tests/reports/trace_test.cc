// Chrome trace export: metadata per device and lane, slices that nest on
// every track (overlapping collectives on lanes), nanosecond timestamps
// sorted per track, numeric args, HBM and link counters, flows joining a
// collective across devices; the recording bound (devices, window, event
// limit) on a real small workload; deterministic bytes.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>

#include "common/error.h"
#include "driver/run_workload.h"
#include "reports/trace.h"
#include "tests/test_files.h"

namespace podsim::reports {
namespace {

sim::TraceEvent slice(int64_t device, const char* track, const char* name, double start_s,
                      double duration_s, double hbm_bytes_per_s = 0, int64_t flow = -1) {
  return sim::TraceEvent{
      device,          track, name, start_s, duration_s, {{"op_name", "fwd/x"}}, {{"bytes", 4096}},
      hbm_bytes_per_s, flow};
}

sim::Timeline two_device_timeline() {
  sim::Timeline t;
  t.fidelity = sim::Fidelity::kFull;
  t.devices = 2;
  t.traced_devices = {0, 1};
  t.step_time_s = 1.0;
  // Deliberately not in time or track order; two all-reduces on device 0
  // partly overlap (0.5-0.75 and 0.6-0.9): they must go to two lanes.
  t.events = {slice(0, "collectives all-reduce", "all-reduce.5", 0.6, 0.3, 0, 7),
              slice(0, "compute", "dot.1", 0.0, 0.5, 2e9),
              slice(0, "collectives all-reduce", "all-reduce.4", 0.5, 0.25, 1e9, 3),
              slice(0, "compute", "add.2", 0.5, 0.001, 4e9),
              slice(1, "compute", "dot.1", 0.0, 0.5, 2e9),
              slice(1, "collectives all-reduce", "all-reduce.4", 0.5, 0.25, 1e9, 3)};
  t.link_loads = {{0, "ici 0 chip 0->1 dim 0+", 0.5, 0.25, 0.5},
                  {0, "ici 0 chip 0->1 dim 0+", 0.6, 0.3, 0.25}};
  return t;
}

struct Parsed {
  nlohmann::json json;
  std::map<std::pair<int64_t, int64_t>, std::string> thread_names;
  std::map<std::pair<int64_t, int64_t>, std::vector<nlohmann::json>>
      slices;  // per (pid, tid), file order
  std::map<std::pair<int64_t, std::string>, std::vector<nlohmann::json>>
      counters;                                          // per (pid, name)
  std::map<int64_t, std::vector<nlohmann::json>> flows;  // per id
};

Parsed parse(const std::string& text) {
  Parsed p;
  p.json = nlohmann::json::parse(text);
  for (const auto& e : p.json.at("traceEvents")) {
    const std::string ph = e.at("ph");
    if (ph == "M" && e["name"] == "thread_name")
      p.thread_names[{e["pid"].get<int64_t>(), e["tid"].get<int64_t>()}] =
          e["args"]["name"].get<std::string>();
    if (ph == "X") p.slices[{e["pid"].get<int64_t>(), e["tid"].get<int64_t>()}].push_back(e);
    if (ph == "C") p.counters[{e["pid"].get<int64_t>(), e["name"].get<std::string>()}].push_back(e);
    if (ph == "s" || ph == "t" || ph == "f") p.flows[e["id"].get<int64_t>()].push_back(e);
  }
  return p;
}

// Every track's slices are sorted by ts and nest: a slice starting inside
// an open one ends inside it too (what Perfetto's JSON importer needs).
void expect_sorted_and_nested(const Parsed& p) {
  for (const auto& [track, slices] : p.slices) {
    std::vector<double> open_ends;
    double last_ts = -1;
    for (const auto& e : slices) {
      const double ts = e["ts"].get<double>(), end = ts + e["dur"].get<double>();
      EXPECT_GE(ts, last_ts) << "unsorted on pid " << track.first << " tid " << track.second;
      last_ts = ts;
      while (!open_ends.empty() && open_ends.back() <= ts + 1e-9) open_ends.pop_back();
      if (!open_ends.empty()) {
        EXPECT_LE(end, open_ends.back() + 1e-9)
            << e["name"] << " overlaps its parent partly on tid " << track.second;
      }
      open_ends.push_back(end);
    }
  }
  for (const auto& [key, samples] : p.counters)
    for (size_t i = 1; i < samples.size(); ++i)
      EXPECT_LE(samples[i - 1]["ts"].get<double>(), samples[i]["ts"].get<double>()) << key.second;
}

TEST(Trace, OneThreadPerDeviceTrackAndLaneInFixedOrder) {
  const Parsed p = parse(trace_json(two_device_timeline(), "w"));
  ASSERT_EQ(p.thread_names.size(), 5u);  // device 0: compute, all-reduce, its lane 2; device 1: two
  EXPECT_EQ((p.thread_names.at({0, 1})), "compute");
  EXPECT_EQ((p.thread_names.at({0, 2})), "collectives all-reduce");
  EXPECT_EQ((p.thread_names.at({0, 3})), "collectives all-reduce #2");
  EXPECT_EQ((p.thread_names.at({1, 1})), "compute");
  EXPECT_EQ((p.thread_names.at({1, 2})), "collectives all-reduce");
}

TEST(Trace, OverlappingCollectivesGoToLanesSoEveryTrackNests) {
  const Parsed p = parse(trace_json(two_device_timeline(), "w"));
  expect_sorted_and_nested(p);
  ASSERT_EQ((p.slices.at({0, 2}).size()), 1u);
  EXPECT_EQ((p.slices.at({0, 2})[0]["name"]), "all-reduce.4");
  EXPECT_EQ((p.slices.at({0, 3})[0]["name"]), "all-reduce.5");
}

TEST(Trace, SlicesAreInMicrosecondsWithNumericArgs) {
  const Parsed p = parse(trace_json(two_device_timeline(), "w"));
  const nlohmann::json& e = p.slices.at({0, 2})[0];
  EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 500000.0);   // 0.5 s = 5e5 us
  EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 250000.0);  // 0.25 s
  EXPECT_EQ(e["args"]["op_name"], "fwd/x");
  ASSERT_TRUE(e["args"]["bytes"].is_number());
  EXPECT_EQ(e["args"]["bytes"].get<double>(), 4096);
  EXPECT_EQ(p.json["otherData"]["fidelity"], "full");
}

TEST(Trace, HbmCounterSumsTheRunningSlicesTraffic) {
  const Parsed p = parse(trace_json(two_device_timeline(), "w"));
  // Device 0: dot 2 GB/s on [0, 0.5); add 4 GB/s on [0.5, 0.501) with
  // all-reduce.4's DMAs 1 GB/s on [0.5, 0.75); then 1 GB/s; then 0.
  std::vector<std::pair<double, double>> got;
  for (const auto& c : p.counters.at({0, "HBM"}))
    got.emplace_back(c["ts"].get<double>(), c["args"]["GB/s"].get<double>());
  const std::vector<std::pair<double, double>> want = {
      {0, 2}, {500000, 5}, {501000, 1}, {750000, 0}};
  EXPECT_EQ(got, want);
}

TEST(Trace, LinkCounterSumsUtilisationOfOverlappingLoads) {
  const Parsed p = parse(trace_json(two_device_timeline(), "w"));
  std::vector<std::pair<double, double>> got;
  for (const auto& c : p.counters.at({0, "ici 0 chip 0->1 dim 0+"}))
    got.emplace_back(c["ts"].get<double>(), c["args"]["utilisation"].get<double>());
  // 0.5 on [0.5, 0.75), 0.25 on [0.6, 0.9): 0.5, 0.75, 0.25, 0.
  const std::vector<std::pair<double, double>> want = {
      {500000, 0.5}, {600000, 0.75}, {750000, 0.25}, {900000, 0}};
  EXPECT_EQ(got, want);
}

TEST(Trace, FlowJoinsOneCollectiveAcrossDevices) {
  const Parsed p = parse(trace_json(two_device_timeline(), "w"));
  ASSERT_EQ(p.flows.size(), 1u);  // flow 7 has one member: no arrow
  const auto& members = p.flows.at(3);
  ASSERT_EQ(members.size(), 2u);
  EXPECT_EQ(members[0]["ph"], "s");
  EXPECT_EQ(members[0]["pid"], 0);
  EXPECT_EQ(members[0]["tid"], 2);
  EXPECT_EQ(members[1]["ph"], "f");
  EXPECT_EQ(members[1]["pid"], 1);
  EXPECT_EQ(members[1]["bp"], "e");
  EXPECT_EQ(members[0]["ts"], members[1]["ts"]);
}

TEST(Trace, SameTimelineGivesIdenticalBytes) {
  EXPECT_EQ(trace_json(two_device_timeline(), "w"), trace_json(two_device_timeline(), "w"));
}

TEST(Trace, EmptyTimelineIsStillAValidTrace) {
  nlohmann::json j = nlohmann::json::parse(trace_json(sim::Timeline{}, "w"));
  EXPECT_TRUE(j["traceEvents"].empty());
}

TEST(Trace, FileIsWrittenWholeOrNotAtAllAndNeverOverItsLimit) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("podsim_trace_test_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path path = dir / "t.json";
  const sim::Timeline t = two_device_timeline();
  const std::string text = trace_json(t, "w");
  EXPECT_EQ(write_trace_file(path.string(), t, "w"), static_cast<int64_t>(text.size()));
  EXPECT_EQ(fs::file_size(path), text.size());
  fs::remove(path);
  EXPECT_THROW(write_trace_file(path.string(), t, "w", static_cast<double>(text.size()) - 1),
               UserError);
  EXPECT_TRUE(fs::is_empty(dir));  // neither the trace nor its temp file
  fs::remove_all(dir);
}

// The real pipeline: workloads/small.yaml (8 devices) in full fidelity.
using driver::run_workload;
using driver::RunRequest;
using driver::RunResult;

RunResult small_full(sim::TraceSelection selection) {
  RunRequest request;
  request.workload_path = test_files::source_path("workloads/small.yaml");
  request.fidelity = sim::Fidelity::kFull;
  request.record_trace = true;
  request.trace = std::move(selection);
  return run_workload(request);
}

TEST(TraceOfAWorkload, FullFidelityTraceHasNestedTracksCountersAndFlows) {
  const RunResult r = small_full({});
  const Parsed p = parse(trace_json(r.timeline, "small"));
  expect_sorted_and_nested(p);
  std::set<int64_t> pids;
  for (const auto& [track, slices] : p.slices) pids.insert(track.first);
  EXPECT_EQ(pids.size(), 8u);
  int64_t hbm = 0, links = 0;
  for (const auto& [key, samples] : p.counters)
    (key.second == "HBM" ? hbm : links) += static_cast<int64_t>(samples.size());
  EXPECT_GT(hbm, 0);
  EXPECT_GT(links, 0);
  // Every flow with an arrow starts with s, ends with f, between devices.
  ASSERT_FALSE(p.flows.empty());
  for (const auto& [id, members] : p.flows) {
    ASSERT_GE(members.size(), 2u);
    EXPECT_EQ(members.front()["ph"], "s");
    EXPECT_EQ(members.back()["ph"], "f");
    EXPECT_NE(members.front()["pid"], members.back()["pid"]);
  }
  for (const auto& [track, slices] : p.slices)
    for (const auto& e : slices)
      if (e["cat"] == "compute") {
        EXPECT_TRUE(e["args"]["flops"].is_number());
      }
}

TEST(TraceOfAWorkload, DevicesListAndSampleSelectTheProcesses) {
  sim::TraceSelection list;
  list.devices = {5, 2};
  EXPECT_EQ(small_full(list).timeline.traced_devices, (std::vector<int64_t>{2, 5}));
  sim::TraceSelection sample;
  sample.sample = 4;  // 8 devices: every second one
  const RunResult r = small_full(sample);
  EXPECT_EQ(r.timeline.traced_devices, (std::vector<int64_t>{0, 2, 4, 6}));
  for (const sim::TraceEvent& e : r.timeline.events) EXPECT_EQ(e.device % 2, 0);
}

TEST(TraceOfAWorkload, WindowKeepsWhatOverlapsIt) {
  const RunResult whole = small_full({});
  sim::TraceSelection window;
  window.window_given = true;
  window.window_begin_s = whole.timeline.step_time_s * 0.25;
  window.window_end_s = whole.timeline.step_time_s * 0.5;
  const RunResult part = small_full(window);
  ASSERT_FALSE(part.timeline.events.empty());
  EXPECT_LT(part.timeline.events.size(), whole.timeline.events.size());
  for (const sim::TraceEvent& e : part.timeline.events) {
    EXPECT_LT(e.start_s, window.window_end_s);
    EXPECT_GE(e.start_s + e.duration_s, window.window_begin_s);
  }
  EXPECT_FALSE(part.timeline.trace_over_limit);
}

TEST(TraceOfAWorkload, RecordingKeepsAtMostTheLimit) {
  const RunResult whole = small_full({});
  const auto items = [](const sim::Timeline& t) {
    return static_cast<int64_t>(t.events.size() + t.link_loads.size());
  };
  ASSERT_GT(items(whole.timeline), 100);
  // A window over the limit: counted, kept up to the limit, marked over.
  sim::TraceSelection window;
  window.window_given = true;
  window.window_end_s = 1e9;  // finite: no estimate before the run
  window.max_events = 40;
  const RunResult over = small_full(window);
  EXPECT_TRUE(over.timeline.trace_over_limit);
  EXPECT_EQ(items(over.timeline), 40);
  EXPECT_EQ(over.timeline.trace_events_seen, items(whole.timeline));
  // No window: the trace stops where the limit is reached, plus what was
  // then in flight (bounded by the devices' streams and links).
  sim::TraceSelection prefix;
  prefix.max_events = 40;
  const RunResult cut = small_full(prefix);
  EXPECT_FALSE(cut.timeline.trace_over_limit);
  ASSERT_GT(cut.timeline.trace_cut_s, 0);
  EXPECT_LT(cut.timeline.trace_cut_s, whole.timeline.step_time_s);
  EXPECT_GE(items(cut.timeline), 40);
  EXPECT_LT(items(cut.timeline), items(whole.timeline));
  for (const sim::TraceEvent& e : cut.timeline.events)
    EXPECT_LT(e.start_s, cut.timeline.trace_cut_s);
  // The written trace stays under the byte estimate the limit rests on.
  EXPECT_LE(static_cast<double>(trace_json(cut.timeline, "small").size()),
            static_cast<double>(items(cut.timeline)) * kTraceBytesPerItem);
}

TEST(TraceOfAWorkload, WholeStepWindowOverTheLimitIsRefusedBeforeTheRun) {
  const RunResult whole = small_full({});
  const auto slices = static_cast<int64_t>(whole.timeline.events.size());
  sim::TraceSelection open;
  open.window_given = true;  // 0 to the end
  open.max_events = slices - 1;
  EXPECT_THROW(small_full(open), UserError);
  // The estimate counts the slices exactly: at the limit the run goes on,
  // and its link loads take it over, which the run itself finds.
  open.max_events = slices;
  const RunResult run = small_full(open);
  ASSERT_FALSE(run.timeline.link_loads.empty());
  EXPECT_TRUE(run.timeline.trace_over_limit);
}

TEST(TraceOfAWorkload, FastModeTracesDeviceZeroWithLinkCounters) {
  RunRequest request;
  request.workload_path = test_files::source_path("workloads/small.yaml");
  request.record_trace = true;
  const RunResult r = run_workload(request);
  EXPECT_EQ(r.timeline.traced_devices, (std::vector<int64_t>{0}));
  const Parsed p = parse(trace_json(r.timeline, "small"));
  expect_sorted_and_nested(p);
  bool link = false;
  for (const auto& [key, samples] : p.counters) link = link || key.second.starts_with("ici ");
  EXPECT_TRUE(link);
  request.trace.devices = {3};  // fast mode simulates device 0 alone
  EXPECT_THROW(run_workload(request), UserError);
}

}  // namespace
}  // namespace podsim::reports
