// `podsim run` end to end (DESIGN.md data flow): workload YAML -> hardware
// System -> model builder -> compiler::compile -> sim::simulate -> Report.
// Every user-caused problem on the way is a podsim::UserError.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "reports/report.h"
#include "sim/timeline.h"
#include "workloads/workload.h"

namespace podsim::reports {

struct RunRequest {
  std::string workload_path;
  std::vector<std::string> overrides;  // --set key=value
  sim::Fidelity fidelity = sim::Fidelity::kFast;
  bool record_trace = false;
  int top_n = 10;
  // Called with the stage ("loading", "compiling", "simulating", "reporting")
  // and the fraction of that stage done (0..1); may be empty.
  std::function<void(const std::string& stage, double fraction)> progress;
};

struct RunResult {
  workloads::Workload workload;
  Report report;
  sim::Timeline timeline;  // events only when record_trace
};

RunResult run_workload(const RunRequest& request);

// "fast" | "full"; UserError otherwise.
sim::Fidelity fidelity_from_name(const std::string& name);

}  // namespace podsim::reports
