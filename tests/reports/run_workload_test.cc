// compile_workload + simulate_compiled (reports/run_workload.h): one
// compiled program simulated on hardware variants, in process.
#include "reports/run_workload.h"

#include <gtest/gtest.h>

#include "common/error.h"
#include "tests/test_files.h"

namespace podsim::reports {
namespace {

RunRequest small_request(std::vector<std::string> overrides = {}) {
  RunRequest request;
  request.workload_path = test_files::source_path("workloads/small.yaml");
  request.overrides = std::move(overrides);
  return request;
}

TEST(SimulateCompiled, WithoutVariantItIsTheRunAndAVariantIsTheRunWithThatSet) {
  const RunRequest request = small_request();
  const CompiledWorkload compiled = compile_workload(request);
  EXPECT_EQ(simulate_compiled(compiled, request).report.step_time_s, run_workload(request).report.step_time_s);
  const RunResult slower = simulate_compiled(compiled, request, {{"core.op_overhead_s", "2e-6"}});
  EXPECT_EQ(slower.report.step_time_s,
            run_workload(small_request({"hardware.core.op_overhead_s=2e-6"})).report.step_time_s);
  EXPECT_GT(slower.report.step_time_s, run_workload(request).report.step_time_s);
}

TEST(SimulateCompiled, RematAutoKeepsTheCapacityItWasCompiledFor) {
  const RunRequest request = small_request({"training.remat=auto"});
  const CompiledWorkload compiled = compile_workload(request);
  // Another capacity would have compiled another recomputation.
  try {
    simulate_compiled(compiled, request, {{"hbm.capacity_bytes", "8589934592"}});
    FAIL() << "a variant of the HBM capacity under remat: auto was simulated";
  } catch (const UserError& e) {
    EXPECT_EQ(e.location().file, "hardware.hbm.capacity_bytes=8.58993e+09");
    EXPECT_NE(e.message().find("remat: auto compiled the program for 1.71799e+10 bytes"), std::string::npos)
        << e.message();
  }
  // The same capacity, or any other key, is a variant like any.
  EXPECT_GT(simulate_compiled(compiled, request, {{"hbm.capacity_bytes", "17179869184"}}).report.step_time_s, 0);
  EXPECT_GT(simulate_compiled(compiled, request, {{"hbm.bandwidth", "2e11"}}).report.step_time_s, 0);
}

}  // namespace
}  // namespace podsim::reports
