// `podsim run` end to end at fast fidelity (load, build, compile, simulate,
// report) for the default workload, workloads/dense_1t_2048.yaml (override
// with PODSIM_BENCH_WORKLOAD; run from the repository root). Counters: the simulated step time and
// the compile / simulate wall split of the last iteration.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>

#include "driver/run_workload.h"
#include "reports/formats.h"

namespace {

std::string bench_workload() {
  if (const char* path = std::getenv("PODSIM_BENCH_WORKLOAD")) return path;
#ifdef PODSIM_SOURCE_DIR
  return std::string(PODSIM_SOURCE_DIR) + "/workloads/dense_1t_2048.yaml";
#else
  return "workloads/dense_1t_2048.yaml";  // run from the repository root
#endif
}

void BM_RunWorkloadFast(benchmark::State& state) {
  podsim::driver::RunRequest request;
  request.workload_path = bench_workload();
  request.fidelity = podsim::sim::Fidelity::kFast;
  podsim::reports::Report last;
  for (auto _ : state) {
    podsim::driver::RunResult result = podsim::driver::run_workload(request);
    std::string text = podsim::reports::report_json(result.report);
    benchmark::DoNotOptimize(text);
    last = result.report;
  }
  state.counters["step_time_s"] = last.step_time_s;
  state.counters["compile_wall_s"] = last.compile_wall_s;
  state.counters["simulate_wall_s"] = last.simulate_wall_s;
  state.counters["mfu"] = last.mfu;
}
BENCHMARK(BM_RunWorkloadFast)->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace
