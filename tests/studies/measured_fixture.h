// Measured-numbers files and run outcomes shared by the calibration tests.
#pragma once

#include <fmt/format.h>

#include <string>

#include "studies/calibration.h"

namespace podsim::studies::measured_fixture {

inline constexpr const char* kMeasured = R"(source: "measurements.md"
points:
  - config: Dense
    workload: ../w/dense.yaml
    metric: tokens_per_second
    measured: 4000
  - config: Moe
    workload: /abs/moe.yaml
    metric: steps_per_second
    measured: 0.5
    source: "measurements.md MoE table"
)";

inline JobOutcome run_with(double step_time_s, double tokens_per_second, double mfu) {
  JobOutcome run;
  run.ok = true;
  run.metrics = {{"step_time_s", fmt::format("{}", step_time_s)},
                 {"tokens_per_second", fmt::format("{}", tokens_per_second)},
                 {"mfu", fmt::format("{}", mfu)}};
  return run;
}

inline constexpr const char* kChecks = R"(
checks:
  - config: Moe
    workload: ../w/moe.yaml
    quantity: remat share
    field: time_by_pass_s.recompute
    per_step: true
    measured: 0.28
  - config: Moe
    workload: ../w/moe.yaml
    quantity: layer matmuls | of peak
    field: flops_utilization.layer_matmuls
    at_least: 0.85
  - config: Dense
    workload: ../w/dense.yaml
    quantity: GSPMD utilization
    field: mfu
    range: [0.50, 0.62]
)";

inline JobOutcome run_with_field(const std::string& key, double value, double step_time_s = 2.0) {
  JobOutcome run = run_with(step_time_s, 1, 0.55);
  run.metrics.set(key, fmt::format("{}", value));
  return run;
}

}  // namespace podsim::studies::measured_fixture
