// Timeline events -> Chrome trace-event JSON (reports/trace.h). Track ids are
// assigned per device in a fixed order (compute, collectives, then the rest
// by name) so the same timeline gives the same bytes.
#include "reports/trace.h"

#include <map>
#include <set>

namespace podsim::reports {

namespace {

// Sort key of a track: the two stream tracks first, link tracks after.
std::pair<int, std::string> track_order(const std::string& track) {
  if (track == "compute") return {0, track};
  if (track == "collectives") return {1, track};
  return {2, track};
}

struct TrackOrder {
  bool operator()(const std::string& a, const std::string& b) const { return track_order(a) < track_order(b); }
};

constexpr double kMicrosecondsPerSecond = 1e6;

}  // namespace

nlohmann::ordered_json trace_to_json(const sim::Timeline& timeline, const std::string& workload_name) {
  std::map<int64_t, std::set<std::string, TrackOrder>> tracks_of_device;
  for (const sim::TraceEvent& e : timeline.events) tracks_of_device[e.device].insert(e.track);

  // tid per (device, track): 1, 2, ... in TrackOrder.
  std::map<std::pair<int64_t, std::string>, int64_t> tid_of;
  nlohmann::ordered_json events = nlohmann::ordered_json::array();
  for (const auto& [device, tracks] : tracks_of_device) {
    nlohmann::ordered_json process;
    process["name"] = "process_name";
    process["ph"] = "M";
    process["pid"] = device;
    process["args"] = {{"name", "device " + std::to_string(device)}};
    events.push_back(process);
    int64_t tid = 1;
    for (const std::string& track : tracks) {
      tid_of[{device, track}] = tid;
      nlohmann::ordered_json thread;
      thread["name"] = "thread_name";
      thread["ph"] = "M";
      thread["pid"] = device;
      thread["tid"] = tid;
      thread["args"] = {{"name", track}};
      events.push_back(thread);
      nlohmann::ordered_json sort;
      sort["name"] = "thread_sort_index";
      sort["ph"] = "M";
      sort["pid"] = device;
      sort["tid"] = tid;
      sort["args"] = {{"sort_index", tid}};
      events.push_back(sort);
      ++tid;
    }
  }
  for (const sim::TraceEvent& e : timeline.events) {
    nlohmann::ordered_json event;
    event["name"] = e.name;
    event["cat"] = e.track;
    event["ph"] = "X";
    event["pid"] = e.device;
    event["tid"] = tid_of.at({e.device, e.track});
    event["ts"] = e.start_s * kMicrosecondsPerSecond;
    event["dur"] = e.duration_s * kMicrosecondsPerSecond;
    nlohmann::ordered_json args = nlohmann::ordered_json::object();
    for (const auto& [key, value] : e.args) args[key] = value;
    event["args"] = args;
    events.push_back(event);
  }
  nlohmann::ordered_json trace;
  trace["traceEvents"] = events;
  trace["displayTimeUnit"] = "ms";
  trace["otherData"] = {{"workload", workload_name},
                        {"fidelity", timeline.fidelity == sim::Fidelity::kFull ? "full" : "fast"},
                        {"devices", timeline.devices},
                        {"step_time_s", timeline.step_time_s}};
  return trace;
}

std::string trace_json(const sim::Timeline& timeline, const std::string& workload_name) {
  return trace_to_json(timeline, workload_name).dump() + "\n";
}

}  // namespace podsim::reports
