// Simulator throughput (Google Benchmark): SystemC kernel events per second
// and wall time of fast and full-fidelity runs of a small per-device program
// (dots, an all-reduce over the inner mesh axis, an all-gather over the outer
// axis, an all-reduce over every device, repeated by a while loop) on tpuv3
// slices of 128, 512 and 2048 devices laid out as [devices/16, 16] meshes. Full fidelity by
// symmetry class (the 2048-device slice is the whole 32x32 torus: 2 classes; the smaller ones
// have no wraparound: per device) and with every device (FullPerDevice, --no-symmetry).
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "compiler/hlo/hlo_parser.h"
#include "hw_models/config.h"
#include "hw_models/system.h"
#include "sim/simulator.h"

namespace {

using namespace podsim;

std::string bench_program(int64_t outer, int64_t inner, int trips) {
  const int64_t n = outer * inner;
  return fmt::format(R"(HloModule bench, num_partitions={0}
%sum (x: bf16[], y: bf16[]) -> bf16[] {{
  %x = bf16[] parameter(0)
  %y = bf16[] parameter(1)
  ROOT %add = bf16[] add(%x, %y)
}}
%cond (s: (s32[], bf16[512,1024])) -> pred[] {{
  %s = (s32[], bf16[512,1024]{{1,0}}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %limit = s32[] constant({4})
  ROOT %lt = pred[] compare(%i, %limit), direction=LT
}}
%body (b: (s32[], bf16[512,1024])) -> (s32[], bf16[512,1024]) {{
  %b = (s32[], bf16[512,1024]{{1,0}}) parameter(0)
  %i.1 = s32[] get-tuple-element(%b), index=0
  %one = s32[] constant(1)
  %next = s32[] add(%i.1, %one)
  %a = bf16[512,1024]{{1,0}} get-tuple-element(%b), index=1
  %one.f = bf16[] constant(1)
  %w = bf16[1024,1024]{{1,0}} broadcast(%one.f), dimensions={{}}
  %h = bf16[512,1024]{{1,0}} dot(%a, %w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  %r = bf16[512,1024]{{1,0}} all-reduce(%h), channel_id=1, replica_groups=[{1},{2}]<=[{0}], use_global_device_ids=true, to_apply=%sum
  %e = bf16[512,1024]{{1,0}} tanh(%r)
  %g = bf16[{3},1024]{{1,0}} all-gather(%e), channel_id=2, replica_groups=[{2},{1}]<=[{1},{2}]T(1,0), dimensions={{0}}, use_global_device_ids=true
  %s2 = bf16[512,1024]{{1,0}} slice(%g), slice={{[0:512], [0:1024]}}
  %r2 = bf16[512,1024]{{1,0}} all-reduce(%s2), channel_id=3, replica_groups=[1,{0}]<=[{0}], use_global_device_ids=true, to_apply=%sum
  ROOT %out = (s32[], bf16[512,1024]{{1,0}}) tuple(%next, %r2)
}}
ENTRY %main (x: bf16[512,1024]) -> bf16[512,1024] {{
  %zero = s32[] constant(0)
  %x = bf16[512,1024]{{1,0}} parameter(0)
  %init = (s32[], bf16[512,1024]{{1,0}}) tuple(%zero, %x)
  %loop = (s32[], bf16[512,1024]{{1,0}}) while(%init), condition=%cond, body=%body
  ROOT %res = bf16[512,1024]{{1,0}} get-tuple-element(%loop), index=1
}})",
                     n, outer, inner, 512 * outer, trips);
}

void run_bench(benchmark::State& state, sim::Fidelity fidelity, bool symmetry = true) {
  const int64_t devices = state.range(0);
  const int64_t inner = 16, outer = devices / inner;
  hw::MeshLayout layout;
  layout.mesh_shape = {outer, inner};
  const hw::System system(hw::load_hardware("tpuv3"), layout);
  compiler::SpmdProgram program;
  program.module = compiler::parse_hlo(bench_program(outer, inner, 4));
  program.num_devices = devices;
  sim::SimOptions options;
  options.fidelity = fidelity;
  options.symmetry = symmetry;
  uint64_t events = 0;
  double step = 0;
  for (auto _ : state) {
    const sim::Timeline t = sim::simulate(program, system, options);
    events += t.kernel_events;
    step = t.step_time_s;
  }
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["step_us"] = step * 1e6;
}

void BM_SimulateFast(benchmark::State& state) { run_bench(state, sim::Fidelity::kFast); }
void BM_SimulateFull(benchmark::State& state) { run_bench(state, sim::Fidelity::kFull); }
void BM_SimulateFullPerDevice(benchmark::State& state) {
  run_bench(state, sim::Fidelity::kFull, false);
}

BENCHMARK(BM_SimulateFast)->Arg(128)->Arg(512)->Arg(2048)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SimulateFull)->Arg(128)->Arg(512)->Arg(2048)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SimulateFullPerDevice)->Arg(2048)->Unit(benchmark::kMillisecond);

}  // namespace
