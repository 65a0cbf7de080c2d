// Chrome trace-event JSON from a simulated Timeline (`podsim run --trace`), the format
// ui.perfetto.dev and chrome://tracing open: one process per traced device, one thread per track,
// complete, counter and flow events in timestamp order, streamed. docs/traces.md#format and
// docs/traces.md#trace-writer
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "sim/timeline.h"

namespace podsim::reports {

// Bytes of JSON one recorded item (a slice or a link load) takes at most on
// average, with the counter samples and flow events it brings: measured on
// the workloads' traces (docs/traces.md, "Size") and rounded up.
// Turns a byte limit into TraceSelection::max_events.
constexpr double kTraceBytesPerItem = 400;

// The default --trace-limit (bytes): a trace ui.perfetto.dev opens in seconds.
constexpr double kDefaultTraceLimitBytes = 20e6;

// Streams the trace; returns the bytes written.
int64_t write_trace(std::ostream& out, const sim::Timeline& timeline,
                    const std::string& workload_name);
// The same as one string (tests, small traces).
std::string trace_json(const sim::Timeline& timeline, const std::string& workload_name);
// Streams the trace to `path` through a temp file and a rename (written
// whole or not at all); UserError when it cannot be written, or when it
// came to more than max_bytes (> 0): the per-item estimate was low.
int64_t write_trace_file(const std::string& path, const sim::Timeline& timeline,
                         const std::string& workload_name, double max_bytes = 0);

}  // namespace podsim::reports
