// Timeline events -> Chrome trace-event JSON (reports/trace.h). Times are
// rounded to whole nanoseconds first, so a lane's slices never overlap by a
// rounding error; track ids are assigned per device in a fixed order
// (compute, collectives by kind and lane) so the same timeline gives the
// same bytes.
#include "reports/trace.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <tuple>
#include <vector>

#include "common/error.h"
#include "common/files.h"

namespace podsim::reports {

namespace {

int64_t to_ns(double seconds) { return std::llround(seconds * 1e9); }

// Microseconds with three decimals, exactly the nanosecond count.
std::string us(int64_t ns) {
  const int64_t sign = ns < 0 ? -1 : 1;
  const int64_t a = ns * sign;
  return fmt::format("{}{}.{:03d}", sign < 0 ? "-" : "", a / 1000, a % 1000);
}

std::string quoted(const std::string& s) { return nlohmann::json(s).dump(); }

std::string number(double v) {
  if (!std::isfinite(v)) return "0";
  return fmt::format("{:.6g}", v);
}

// A slice placed on its lane.
struct Placed {
  size_t event = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t tid = 0;
};

// Sort rank among events at the same timestamp: a longer slice before the
// slices it encloses, flows after the slices they bind to, counters last.
enum Rank { kSliceRank = 0, kFlowRank = 1, kCounterRank = 2 };

// One output event, formatted only when written (streamed).
struct Out {
  int64_t ts_ns = 0;
  int rank = kSliceRank;
  int64_t order = 0;  // slices: -duration; others: their sequence number
  size_t index = 0;   // slices and flows: the event; counters: the sample
  int64_t flow = -1;  // flows: the id
  char phase = 'X';   // X, s, t, f; counters: 'C'
};

struct CounterSample {
  int64_t device = 0;
  const std::string* name = nullptr;  // nullptr: HBM
  int64_t ts_ns = 0;
  double value = 0;
};

// A counter's samples from intervals that add `value` while they last:
// the sum after every change, a sample only when the sum changes.
std::vector<std::pair<int64_t, double>> counter_samples(
    std::vector<std::pair<int64_t, double>> changes) {
  std::stable_sort(changes.begin(), changes.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::pair<int64_t, double>> samples;
  double sum = 0;
  for (size_t i = 0; i < changes.size();) {
    const int64_t t = changes[i].first;
    for (; i < changes.size() && changes[i].first == t; ++i) sum += changes[i].second;
    const double value = std::abs(sum) < 1e-9 ? 0.0 : sum;
    if (samples.empty() || samples.back().second != value) samples.emplace_back(t, value);
  }
  return samples;
}

}  // namespace

int64_t write_trace(std::ostream& out, const sim::Timeline& timeline,
                    const std::string& workload_name) {
  const std::vector<sim::TraceEvent>& events = timeline.events;

  // Lanes: per (device, track), slices by start (longer first); each goes to
  // the first lane whose last slice has ended.
  std::map<std::pair<int64_t, std::string>, std::vector<size_t>> by_track;
  for (size_t i = 0; i < events.size(); ++i)
    by_track[{events[i].device, events[i].track}].push_back(i);
  std::vector<Placed> placed(events.size());
  // (device) -> ordered (track order key, lane name)
  std::map<int64_t, std::map<std::pair<std::pair<int, std::string>, int64_t>, std::string>>
      lanes_of_device;
  std::map<std::pair<int64_t, std::string>, std::vector<int64_t>> lane_ends;  // per (device, track)
  std::vector<std::tuple<int64_t, std::string, int64_t>> lane_of_event(events.size());
  for (auto& [key, indices] : by_track) {
    for (size_t i : indices) {
      placed[i].event = i;
      placed[i].start_ns = to_ns(events[i].start_s);
      placed[i].end_ns =
          std::max(placed[i].start_ns, to_ns(events[i].start_s + events[i].duration_s));
    }
    std::stable_sort(indices.begin(), indices.end(), [&](size_t a, size_t b) {
      if (placed[a].start_ns != placed[b].start_ns) return placed[a].start_ns < placed[b].start_ns;
      return placed[a].end_ns > placed[b].end_ns;
    });
    std::vector<int64_t>& ends = lane_ends[key];
    const std::pair<int, std::string> order{key.second == "compute" ? 0 : 1, key.second};
    for (size_t i : indices) {
      size_t lane = 0;
      while (lane < ends.size() && ends[lane] > placed[i].start_ns) ++lane;
      if (lane == ends.size()) ends.push_back(0);
      ends[lane] = placed[i].end_ns;
      lane_of_event[i] = {key.first, key.second, static_cast<int64_t>(lane)};
      lanes_of_device[key.first][{order, static_cast<int64_t>(lane)}] =
          lane == 0 ? key.second : fmt::format("{} #{}", key.second, lane + 1);
    }
  }
  std::vector<int64_t> devices = timeline.traced_devices;
  for (const auto& [device, lanes] : lanes_of_device) devices.push_back(device);
  for (const sim::LinkLoad& l : timeline.link_loads) devices.push_back(l.device);
  std::sort(devices.begin(), devices.end());
  devices.erase(std::unique(devices.begin(), devices.end()), devices.end());

  int64_t bytes = 0;
  bool first = true;
  auto emit = [&](const std::string& text) {
    if (!first) {
      out << ",\n";
      bytes += 2;
    }
    first = false;
    out << text;
    bytes += static_cast<int64_t>(text.size());
  };
  const std::string head = "{\"traceEvents\":[\n";
  out << head;
  bytes += static_cast<int64_t>(head.size());

  // Metadata: a process per device, a thread per lane, in track order.
  std::map<std::tuple<int64_t, std::string, int64_t>, int64_t> tid_of;
  for (int64_t device : devices) {
    emit(fmt::format(R"({{"name":"process_name","ph":"M","pid":{},"args":{{"name":"device {}"}}}})",
                     device, device));
    emit(fmt::format(
        R"({{"name":"process_sort_index","ph":"M","pid":{},"args":{{"sort_index":{}}}}})", device,
        device));
    int64_t tid = 1;
    for (const auto& [order, name] : lanes_of_device[device]) {
      tid_of[{device, order.first.second, order.second}] = tid;
      emit(
          fmt::format(R"({{"name":"thread_name","ph":"M","pid":{},"tid":{},"args":{{"name":{}}}}})",
                      device, tid, quoted(name)));
      emit(fmt::format(
          R"({{"name":"thread_sort_index","ph":"M","pid":{},"tid":{},"args":{{"sort_index":{}}}}})",
          device, tid, tid));
      ++tid;
    }
  }

  std::vector<Out> outs;
  outs.reserve(events.size() * 2 + timeline.link_loads.size());
  int64_t sequence = 0;
  // Slices.
  for (size_t i = 0; i < events.size(); ++i) {
    placed[i].tid = tid_of.at(lane_of_event[i]);
    outs.push_back(
        {placed[i].start_ns, kSliceRank, placed[i].start_ns - placed[i].end_ns, i, -1, 'X'});
  }
  // Flows: the members of one collective run, by device: s, t..., f.
  std::map<int64_t, std::vector<size_t>> flows;
  for (size_t i = 0; i < events.size(); ++i)
    if (events[i].flow >= 0) flows[events[i].flow].push_back(i);
  for (auto& [id, members] : flows) {
    if (members.size() < 2) continue;
    std::stable_sort(members.begin(), members.end(),
                     [&](size_t a, size_t b) { return events[a].device < events[b].device; });
    for (size_t m = 0; m < members.size(); ++m) {
      const size_t i = members[m];
      const char ph = m == 0 ? 's' : m + 1 == members.size() ? 'f' : 't';
      outs.push_back({placed[i].start_ns, kFlowRank, sequence++, i, id, ph});
    }
  }
  // Counters: HBM traffic per device (kernels and collective DMAs), link
  // utilisation per traced link.
  std::map<int64_t, std::vector<std::pair<int64_t, double>>> hbm;
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i].hbm_bytes_per_s <= 0 || placed[i].end_ns <= placed[i].start_ns) continue;
    auto& changes = hbm[events[i].device];
    changes.emplace_back(placed[i].start_ns, events[i].hbm_bytes_per_s / 1e9);
    changes.emplace_back(placed[i].end_ns, -events[i].hbm_bytes_per_s / 1e9);
  }
  std::vector<CounterSample> samples;
  for (auto& [device, changes] : hbm)
    for (const auto& [t, value] : counter_samples(std::move(changes)))
      samples.push_back({device, nullptr, t, value});
  std::map<std::pair<int64_t, std::string>, std::vector<std::pair<int64_t, double>>> links;
  for (const sim::LinkLoad& l : timeline.link_loads) {
    const int64_t start = to_ns(l.start_s), end = to_ns(l.start_s + l.duration_s);
    if (end <= start) continue;
    auto& changes = links[{l.device, l.link}];
    changes.emplace_back(start, l.utilisation);
    changes.emplace_back(end, -l.utilisation);
  }
  for (auto& [key, changes] : links)
    for (const auto& [t, value] : counter_samples(std::move(changes)))
      samples.push_back({key.first, &key.second, t, std::min(1.0, value)});
  for (size_t i = 0; i < samples.size(); ++i)
    outs.push_back({samples[i].ts_ns, kCounterRank, sequence++, i, -1, 'C'});

  std::stable_sort(outs.begin(), outs.end(), [](const Out& a, const Out& b) {
    if (a.ts_ns != b.ts_ns) return a.ts_ns < b.ts_ns;
    if (a.rank != b.rank) return a.rank < b.rank;
    return a.order < b.order;
  });
  for (const Out& o : outs) {
    if (o.phase == 'C') {
      const CounterSample& c = samples[o.index];
      if (c.name == nullptr)
        emit(fmt::format(R"({{"name":"HBM","ph":"C","pid":{},"ts":{},"args":{{"GB/s":{}}}}})",
                         c.device, us(c.ts_ns), number(c.value)));
      else
        emit(fmt::format(R"({{"name":{},"ph":"C","pid":{},"ts":{},"args":{{"utilisation":{}}}}})",
                         quoted(*c.name), c.device, us(c.ts_ns), number(c.value)));
      continue;
    }
    const sim::TraceEvent& e = events[o.index];
    const Placed& p = placed[o.index];
    if (o.phase != 'X') {
      emit(fmt::format(
          R"({{"name":{},"cat":"collective","ph":"{}","id":{},"pid":{},"tid":{},"ts":{}{}}})",
          quoted(e.name), o.phase, o.flow, e.device, p.tid, us(p.start_ns),
          o.phase == 'f' ? R"(,"bp":"e")" : ""));
      continue;
    }
    std::string args;
    for (const auto& [key, value] : e.args)
      args += fmt::format("{}{}:{}", args.empty() ? "" : ",", quoted(key), quoted(value));
    for (const auto& [key, value] : e.numbers)
      args += fmt::format("{}{}:{}", args.empty() ? "" : ",", quoted(key), number(value));
    emit(fmt::format(
        R"({{"name":{},"cat":{},"ph":"X","pid":{},"tid":{},"ts":{},"dur":{},"args":{{{}}}}})",
        quoted(e.name), quoted(e.track), e.device, p.tid, us(p.start_ns), us(p.end_ns - p.start_ns),
        args));
  }

  nlohmann::ordered_json other;
  other["workload"] = workload_name;
  other["fidelity"] = sim::fidelity_name(timeline.fidelity);
  other["devices"] = timeline.devices;
  other["traced_devices"] = timeline.traced_devices;
  other["step_time_s"] = timeline.step_time_s;
  const sim::TraceSelection& sel = timeline.trace_selection;
  const double end_s = timeline.trace_cut_s >= 0 ? timeline.trace_cut_s
                                                 : std::min(sel.window_end_s, timeline.step_time_s);
  other["window_ms"] = {sel.window_begin_s * 1e3, std::max(sel.window_begin_s, end_s) * 1e3};
  if (timeline.trace_cut_s >= 0)
    other["note"] = fmt::format(
        "the trace limit was reached at {:.6g} ms: the step's first part only "
        "(--trace-window chooses the part, --trace-devices the devices, --trace-limit the size)",
        timeline.trace_cut_s * 1e3);
  const std::string tail =
      fmt::format("\n],\"displayTimeUnit\":\"ms\",\"otherData\":{}}}\n", other.dump());
  out << tail;
  bytes += static_cast<int64_t>(tail.size());
  return bytes;
}

std::string trace_json(const sim::Timeline& timeline, const std::string& workload_name) {
  std::ostringstream out;
  write_trace(out, timeline, workload_name);
  return out.str();
}

int64_t write_trace_file(const std::string& path, const sim::Timeline& timeline,
                         const std::string& workload_name, double max_bytes) {
  int64_t bytes = 0;
  const auto write = [&](std::ostream& out) { bytes = write_trace(out, timeline, workload_name); };
  const auto within_limit = [&] {
    if (max_bytes > 0 && static_cast<double>(bytes) > max_bytes)
      throw UserError(
          SourceLocation{path, 0, 0},
          fmt::format("the trace came to {:.3g} MB, over the {:.3g} MB limit; nothing was written",
                      static_cast<double>(bytes) / 1e6, max_bytes / 1e6),
          "narrow --trace-window (ms of the step), trace fewer devices with --trace-devices, or "
          "raise --trace-limit");
  };
  write_stream_atomically(path, write, "trace file", within_limit);
  return bytes;
}

}  // namespace podsim::reports
