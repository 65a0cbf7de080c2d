// Compile-time benchmark of the training step of a dense Transformer (the
// `podsim run workloads/dense_1t_2048.yaml` should
// compile in seconds). The default workload's model (1T dense, 2048 devices,
// 2-D sharding, Adafactor with weight-update sharding) is built at 8 and 32
// layers and compiled once with remat "none" (remat "auto" repeats the same
// pipeline per choice). Compile work should be linear in the layer count, so
// the 32/8 time ratio should be close to 4; a quadratic phase drives it
// towards 16. Counters: the per-phase wall seconds of the last iteration and
// the entry instruction counts.
//
//   compile_bench --benchmark_filter=CompileTrainingStep
//   compile_bench --benchmark_filter=LayerScaling   (the 32/8 CPU time ratio)
#include <benchmark/benchmark.h>

#include <fmt/format.h>

#include <ctime>
#include <string>

#include "compiler/compile.h"
#include "workloads/model_builder.h"
#include "workloads/workload.h"

namespace podsim::compiler {
namespace {

// The default workload with `layers` layers and its training options, as
// `podsim run` maps them (driver/run_workload.cc), remat fixed to none.
struct CompileJob {
  workloads::BuiltModel model;
  CompileOptions options;
};

CompileJob dense_job(int64_t layers) {
  // PODSIM_PRESET_DIR (a public define of podsim_hw) is <repo>/hw_models/presets.
  const std::string path = std::string(PODSIM_PRESET_DIR) + "/../../workloads/dense_1t_2048.yaml";
  workloads::Workload w = workloads::load_workload(path, {fmt::format("model.layers={}", layers)});
  CompileJob job{workloads::build_model(w), {}};
  job.options.num_devices = w.mesh.device_count();
  TrainingStepOptions training;
  training.optimizer.kind = OptimizerKind::kAdafactor;
  training.weight_update_sharding = w.training.weight_update_sharding;
  training.mesh = job.model.mesh;
  training.remat = RematKind::kNone;
  job.options.training = training;
  return job;
}

void set_phase_counters(benchmark::State& state, const CompileStats& s) {
  state.counters["training_s"] = s.training_wall_s;
  state.counters["propagate_s"] = s.propagate_wall_s;
  state.counters["partition_s"] = s.partition_wall_s;
  state.counters["fusion_s"] = s.fusion_wall_s;
  state.counters["schedule_s"] = s.schedule_wall_s;
  state.counters["memory_s"] = s.memory_wall_s;
  state.counters["instrs_annotated"] = static_cast<double>(s.instructions_annotated);
  state.counters["instrs_partitioned"] = static_cast<double>(s.instructions_partitioned);
}

// Whole compile (training step -> ... -> memory plan) at state.range(0) layers.
void BM_CompileTrainingStep(benchmark::State& state) {
  const CompileJob job = dense_job(state.range(0));
  CompileStats stats;
  for (auto _ : state) {
    SpmdProgram program = compile(job.model.module, job.options);
    stats = program.stats;
    benchmark::DoNotOptimize(program.memory.peak_bytes);
  }
  set_phase_counters(state, stats);
}
BENCHMARK(BM_CompileTrainingStep)->Arg(8)->Arg(32)->Unit(benchmark::kMillisecond)->Iterations(2);

// Process CPU seconds of one compile (CPU, not wall time: the ratio should
// not depend on what else the machine runs).
double cpu_seconds_to_compile(const CompileJob& job) {
  const std::clock_t start = std::clock();
  SpmdProgram program = compile(job.model.module, job.options);
  benchmark::DoNotOptimize(program.memory.peak_bytes);
  return static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC;
}

// One iteration compiles 8 and 32 layers; "ratio_32_over_8" is the CPU time
// ratio (4 when compile time is linear in the layers).
void BM_LayerScaling(benchmark::State& state) {
  const CompileJob small = dense_job(8);
  const CompileJob large = dense_job(32);
  double small_s = 0, large_s = 0;
  for (auto _ : state) {
    small_s += cpu_seconds_to_compile(small);
    large_s += cpu_seconds_to_compile(large);
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["s_8_layers"] = small_s / n;
  state.counters["s_32_layers"] = large_s / n;
  state.counters["ratio_32_over_8"] = large_s / small_s;
}
BENCHMARK(BM_LayerScaling)->Unit(benchmark::kMillisecond)->Iterations(2);

}  // namespace
}  // namespace podsim::compiler
