// model.layer_loop: compile and end-to-end wall time of the default workload
// (workloads/dense_1t_2048.yaml) at 8, 32 and 128 layers in one run, scanned
// and unrolled (docs/loops.md). With scan the body is compiled once, so the
// compile time should not grow with the layers: counter compile_128_over_8
// (target <= 1.5; unrolled is about 40 with remat auto's repeated compiles).
// Also the simulated step time and peak memory of each, so a run shows that
// the two forms agree (docs/loops.md states by how much).
//
//   loop_bench --benchmark_filter=LayerLoop/scan
//   loop_bench --benchmark_filter=LayerLoop/unrolled   (about a minute)
#include <benchmark/benchmark.h>

#include <fmt/format.h>

#include <chrono>
#include <string>

#include "driver/run_workload.h"
#include "reports/formats.h"

namespace {

std::string default_workload() {
  // PODSIM_PRESET_DIR (a public define of podsim_hw) is <repo>/hw_models/presets.
  return std::string(PODSIM_PRESET_DIR) + "/../../workloads/dense_1t_2048.yaml";
}

void run_layers(benchmark::State& state, const std::string& loop) {
  const int64_t layer_counts[] = {8, 32, 128};
  double compile_s[3] = {}, total_s[3] = {};
  for (auto _ : state) {
    for (int k = 0; k < 3; ++k) {
      podsim::driver::RunRequest request;
      request.workload_path = default_workload();
      request.overrides = {fmt::format("model.layers={}", layer_counts[k]),
                           "model.layer_loop=" + loop};
      const auto start = std::chrono::steady_clock::now();
      podsim::driver::RunResult result = podsim::driver::run_workload(request);
      std::string text = podsim::reports::report_json(result.report);
      benchmark::DoNotOptimize(text);
      total_s[k] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      compile_s[k] = result.report.compile_wall_s;
      const std::string n = std::to_string(layer_counts[k]);
      state.counters["compile_s_" + n] = compile_s[k];
      state.counters["simulate_s_" + n] = result.report.simulate_wall_s;
      state.counters["end_to_end_s_" + n] = total_s[k];
      state.counters["step_time_s_" + n] = result.report.step_time_s;
      state.counters["peak_GiB_" + n] =
          static_cast<double>(result.report.peak_memory_bytes) / (1 << 30);
    }
  }
  state.counters["compile_128_over_8"] = compile_s[2] / compile_s[0];
  state.counters["end_to_end_128_over_8"] = total_s[2] / total_s[0];
}

void BM_LayerLoopScan(benchmark::State& state) { run_layers(state, "scan"); }
void BM_LayerLoopUnrolled(benchmark::State& state) { run_layers(state, "unrolled"); }
BENCHMARK(BM_LayerLoopScan)->Name("LayerLoop/scan")->Unit(benchmark::kSecond)->Iterations(1);
BENCHMARK(BM_LayerLoopUnrolled)
    ->Name("LayerLoop/unrolled")
    ->Unit(benchmark::kSecond)
    ->Iterations(1);

}  // namespace
