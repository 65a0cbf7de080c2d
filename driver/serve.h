// The server half of `podsim run --serve` (the client is
// driver/workload_server.h): compile once (again for a variant that changes
// the program: another HBM capacity under remat: auto, another peak or link
// rate under the windowed-einsum overlap test), then one report per input
// line. A line holds hardware overrides ("hardware.core.op_overhead_s=2e-6
// ...", blank = the workload's own hardware); the answer is the report's
// CSV data line, preceded by the header line on the first answer and
// whenever the columns change (so a stream of answers reads as one CSV
// table), or one line "error: <message>" when the variant is rejected, then
// a flush. The protocol behind `podsim calibrate --fit`.
#pragma once

#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "driver/run_workload.h"

namespace podsim::driver {

// "hardware.a.b=1 hardware.c=2" -> {{"a.b","1"},{"c","2"}}; UserError for
// a word that is not hardware.<key>=<value>.
std::vector<std::pair<std::string, std::string>> parse_serve_line(const std::string& line);

// Compiles `request` (a UserError here ends the server), then answers every
// line of `in` on `out` until end of input.
void serve_workload(const RunRequest& request, bool wall_times, std::istream& in,
                    std::ostream& out);

}  // namespace podsim::driver
