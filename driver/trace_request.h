// `podsim run --trace` flags as a typed request: which devices
// (--trace-devices), which part of the step (--trace-window) and how large
// a file (--trace-limit, as a number of recorded items; reports/trace.h's
// bytes per item).
#pragma once

#include <optional>
#include <string>

#include "sim/timeline.h"

namespace podsim::driver {

// The flags as the user wrote them; empty = not given.
struct TraceFlags {
  std::string path;     // --trace FILE.json
  std::string devices;  // "0,5,17" | "sample:4" | "all"
  std::string window;   // "A:B" in ms of the step; either side may be empty
  std::string limit;    // bytes ("20MB"); "0" or "none" = no limit
};

struct TraceRequest {
  std::string path;
  sim::TraceSelection selection;
  double limit_bytes = 0;  // 0: none
};

// nullopt without --trace; UserError when a --trace-* flag comes without
// --trace or does not parse.
std::optional<TraceRequest> parse_trace_flags(const TraceFlags& flags);

// The parts, each filling its fields of `selection`.
void parse_trace_devices(const std::string& text, sim::TraceSelection& selection);
void parse_trace_window(const std::string& text, sim::TraceSelection& selection);
// Bytes: reports::kDefaultTraceLimitBytes when empty, 0 for "0" or "none".
double parse_trace_limit(const std::string& text);

}  // namespace podsim::driver
