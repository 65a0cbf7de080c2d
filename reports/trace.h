// Chrome trace-event JSON from a simulated Timeline (`podsim run --trace`),
// the format ui.perfetto.dev and chrome://tracing open: one process per
// traced device; one thread per track ("compute", "collectives <kind>", a
// kind's overlapping collectives on further lanes "collectives <kind> #2",
// ... so every track's slices nest); complete events (ph "X", ts/dur in
// microseconds at nanosecond resolution, numeric args as numbers); counter
// events (ph "C") for the device's HBM traffic and each traced link's
// utilisation; flow events (ph "s"/"t"/"f", one id) joining one collective
// run across the traced devices. Events are written in timestamp order,
// streamed (no whole-document string). Reference: "Trace Event Format"
// (Google, 2016): "Complete Events", "Counter Events", "Flow Events",
// "Metadata Events".
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
int64_t write_trace(std::ostream& out, const sim::Timeline& timeline, const std::string& workload_name);
// The same as one string (tests, small traces).
std::string trace_json(const sim::Timeline& timeline, const std::string& workload_name);
// Streams the trace to `path` through a temp file and a rename (written
// whole or not at all); UserError when it cannot be written, or when it
// came to more than max_bytes (> 0): the per-item estimate was low.
int64_t write_trace_file(const std::string& path, const sim::Timeline& timeline, const std::string& workload_name,
                         double max_bytes = 0);

}  // namespace podsim::reports
