// Chrome trace-event JSON from a simulated Timeline (`podsim run --trace`),
// the format ui.perfetto.dev and chrome://tracing open: one process per
// device, one thread per track ("compute", "collectives", "ici <link>"),
// complete events (ph "X") with ts/dur in microseconds and the op's details
// in args. Reference: "Trace Event Format" (Google, 2016), sections
// "Complete Events" and "Metadata Events".
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "sim/timeline.h"

namespace podsim::reports {

nlohmann::ordered_json trace_to_json(const sim::Timeline& timeline, const std::string& workload_name);
std::string trace_json(const sim::Timeline& timeline, const std::string& workload_name);

}  // namespace podsim::reports
