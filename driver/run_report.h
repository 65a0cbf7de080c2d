// `podsim run` below the command line: the run with a progress line on
// stderr, then the report and the optional trace, each written whole or not
// at all. The trace limit policy: a trace window holding more than the limit
// is refused before anything is written; without a window the trace keeps
// the step's first part that fits (noted on stderr).
#pragma once

#include <optional>
#include <string>

#include "driver/run_workload.h"
#include "driver/trace_request.h"
#include "reports/formats.h"

namespace podsim::driver {

struct RunOutputs {
  reports::Format format = reports::Format::kTable;
  bool wall_times = false;            // json/csv: compile_wall_s and simulate_wall_s
  std::string output;                 // report file; empty or "-" = stdout
  std::optional<TraceRequest> trace;  // --trace and its selection
};

// Runs `request` (its trace fields set from outputs.trace) and writes.
void run_and_write(RunRequest request, const RunOutputs& outputs);

// Writes a finished run's report and trace as `outputs` say. UserError
// (nothing written) when the trace window holds more than the limit.
void write_run_outputs(const RunResult& result, sim::Fidelity fidelity, const RunOutputs& outputs);

}  // namespace podsim::driver
