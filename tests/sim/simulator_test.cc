// simulate(): collectives against their closed forms, overlap of async
// collectives with compute, time accounting, while loops, fast vs full.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <string>

#include <fmt/format.h>

#include "compiler/compile.h"
#include "compiler/hlo/hlo_parser.h"
#include "tests/fixtures/fixture_paths.h"
#include "tests/sim/sim_test_util.h"

namespace podsim::sim {
namespace {

using testing::make_system;
using testing::program_from_hlo;
using testing::ring_system;
using testing::run;
using testing::run_every_iteration;

using testing::kHopLatency;
using testing::kLinkBandwidth;

// Bidirectional ring all-reduce over n devices on a closed ring of links
// (collectives.h): reduce-scatter then all-gather, each
// (n-1)/n * V / (2W) plus n/2 one-hop latencies.
double ring_all_reduce_s(double bytes, int n) {
  const double pass = (n - 1.0) / n * bytes / (2 * kLinkBandwidth) + n / 2.0 * kHopLatency;
  return 2 * pass;
}

std::string all_reduce_program(int devices, const std::string& shape) {
  return fmt::format(R"(HloModule ar, num_partitions={0}
%sum (x: bf16[], y: bf16[]) -> bf16[] {{
  %x = bf16[] parameter(0)
  %y = bf16[] parameter(1)
  ROOT %add = bf16[] add(%x, %y)
}}
ENTRY %main (p: {1}) -> {1} {{
  %p = {1} parameter(0)
  ROOT %ar = {1} all-reduce(%p), channel_id=1, replica_groups=[1,{0}]<=[{0}], use_global_device_ids=true, to_apply=%sum
}})",
                     devices, shape);
}

TEST(Simulator, PureAllReduceEqualsRingClosedForm) {
  const hw::System system = ring_system(8);
  const auto program = program_from_hlo(all_reduce_program(8, "bf16[1024,1024]"));
  const double bytes = 1024.0 * 1024 * 2;
  for (Fidelity f : {Fidelity::kFast, Fidelity::kFull}) {
    const Timeline t = run(program, system, f);
    EXPECT_NEAR(t.step_time_s, ring_all_reduce_s(bytes, 8), 1e-11) << fidelity_name(f);
    // Nothing computes: the whole step is the exposed all-reduce.
    EXPECT_EQ(t.compute_s, 0);
    EXPECT_NEAR(t.exposed_communication_s, t.step_time_s, 1e-12);
    ASSERT_EQ(t.collectives.size(), 1u);
    EXPECT_EQ(t.collectives[0].kind, "all-reduce");
    EXPECT_EQ(t.collectives[0].count, 1);
    EXPECT_DOUBLE_EQ(t.collectives[0].bytes, bytes);
    // Full: unit steps map the closed ring onto itself, one symmetry class (sim/symmetry.h).
    EXPECT_EQ(t.devices_simulated, 1);
  }
}

TEST(Simulator, PerDimAndPipelinedTorusAllReducesEqualTheirClosedForms) {
  // 16 devices on a 4x4-chip torus (the full pod, one device per chip); the
  // all-reduce's group is the [4, 4] grid. docs/collectives.md derives:
  //   ring_per_dim             15/8 V/W + 12 hops (4 one-way 4-ring passes of 3 steps)
  //   torus_pipelined, C = 8   3/4 V/W + 11 slots x 2 hops
  // and a ring step overhead o adds o to each of those steps (12 and 22).
  const auto program = program_from_hlo(all_reduce_program(16, "bf16[1024,1024]"));
  const double v = 1024.0 * 1024 * 2;
  const double o = 2.5e-6;
  auto system = [](const std::string& algorithm, const std::string& overhead) {
    return make_system({16}, {{"ici.pod_dims", "[4, 4]"},
                              {"ici.pod_wraparound", "[true, true]"},
                              {"chip.devices_per_chip", "1"},
                              {"ici.collective_algorithm", algorithm},
                              {"ici.collective_chunks", "8"},
                              {"ici.ring_step_overhead_s", overhead}});
  };
  struct Case {
    std::string algorithm;
    double overhead, want;
  };
  for (const Case& c :
       {Case{"ring_per_dim", 0, 15.0 / 8 * v / kLinkBandwidth + 12 * kHopLatency},
        Case{"ring_per_dim", o, 15.0 / 8 * v / kLinkBandwidth + 12 * (kHopLatency + o)},
        Case{"torus_pipelined", 0, 3.0 / 4 * v / kLinkBandwidth + 22 * kHopLatency},
        Case{"torus_pipelined", o, 3.0 / 4 * v / kLinkBandwidth + 22 * (kHopLatency + o)}}) {
    const hw::System s = system(c.algorithm, fmt::format("{}", c.overhead));
    for (Fidelity f : {Fidelity::kFast, Fidelity::kFull})
      EXPECT_NEAR(run(program, s, f).step_time_s, c.want, 1e-11)
          << c.algorithm << " o=" << c.overhead << " " << fidelity_name(f);
  }
}

// A collective and a dot that does (independent) or does not (dependent)
// overlap with it.
std::string overlap_program(bool dependent) {
  return fmt::format(R"(HloModule overlap, num_partitions=8
%sum (x: bf16[], y: bf16[]) -> bf16[] {{
  %x = bf16[] parameter(0)
  %y = bf16[] parameter(1)
  ROOT %add = bf16[] add(%x, %y)
}}
ENTRY %main (p: bf16[2048,2048], a: bf16[2048,2048]) -> (bf16[2048,2048], bf16[2048,2048]) {{
  %p = bf16[2048,2048]{{1,0}} parameter(0)
  %a = bf16[2048,2048]{{1,0}} parameter(1)
  %ar = bf16[2048,2048]{{1,0}} all-reduce(%p), channel_id=1, replica_groups=[1,8]<=[8], use_global_device_ids=true, to_apply=%sum
  %d = bf16[2048,2048]{{1,0}} dot({0}, %a), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  ROOT %t = (bf16[2048,2048]{{1,0}}, bf16[2048,2048]{{1,0}}) tuple(%ar, %d)
}})",
                     dependent ? "%ar" : "%p");
}

double dot_2048_s(const hw::System& system) {
  hw::MatmulQuery q;
  q.work = hw::MatmulWork{1, 2048, 2048, 2048, hw::MatmulInputKind::kBf16};
  q.input_bytes_per_element = 2;
  q.output_bytes_per_element = 2;
  return system.core().time_matmul(q).seconds;
}

TEST(Simulator, IndependentCollectiveHidesUnderCompute) {
  const hw::System system = ring_system(8);
  const double dot = dot_2048_s(system);
  const double ar = ring_all_reduce_s(2048.0 * 2048 * 2, 8);
  ASSERT_LT(ar, dot);  // premise: the dot is longer than the all-reduce
  for (Fidelity f : {Fidelity::kFast, Fidelity::kFull}) {
    const Timeline t = run(program_from_hlo(overlap_program(false)), system, f);
    EXPECT_NEAR(t.step_time_s, dot, 1e-11) << fidelity_name(f);
    EXPECT_EQ(t.exposed_communication_s, 0);
    EXPECT_NEAR(t.collectives.at(0).seconds, ar, 1e-11);
  }
}

TEST(Simulator, DependentCollectiveIsExposed) {
  const hw::System system = ring_system(8);
  const double dot = dot_2048_s(system);
  const double ar = ring_all_reduce_s(2048.0 * 2048 * 2, 8);
  for (Fidelity f : {Fidelity::kFast, Fidelity::kFull}) {
    const Timeline t = run(program_from_hlo(overlap_program(true)), system, f);
    // The dot waits for the all-reduce: their times add.
    EXPECT_NEAR(t.step_time_s, ar + dot, 2e-11) << fidelity_name(f);
    EXPECT_NEAR(t.exposed_communication_s, ar, 1e-11);
    EXPECT_NEAR(t.compute_s, dot, 1e-11);
    const auto it =
        std::find_if(t.ops.begin(), t.ops.end(), [](const OpRecord& r) { return r.name == "ar"; });
    ASSERT_NE(it, t.ops.end());
    EXPECT_NEAR(it->exposed_seconds, ar, 1e-11);
    EXPECT_TRUE(it->collective);
  }
}

std::string while_program(int trips, const std::string& groups = "[1,8]<=[8]") {
  return fmt::format(R"(HloModule loop, num_partitions=8
%sum (x: bf16[], y: bf16[]) -> bf16[] {{
  %x = bf16[] parameter(0)
  %y = bf16[] parameter(1)
  ROOT %add = bf16[] add(%x, %y)
}}
%cond (s: (s32[], bf16[512,512])) -> pred[] {{
  %s = (s32[], bf16[512,512]{{1,0}}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant({0})
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}}
%body (b: (s32[], bf16[512,512])) -> (s32[], bf16[512,512]) {{
  %b = (s32[], bf16[512,512]{{1,0}}) parameter(0)
  %i.1 = s32[] get-tuple-element(%b), index=0
  %one = s32[] constant(1)
  %next = s32[] add(%i.1, %one)
  %h = bf16[512,512]{{1,0}} get-tuple-element(%b), index=1
  %d = bf16[512,512]{{1,0}} dot(%h, %h), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  %r = bf16[512,512]{{1,0}} all-reduce(%d), channel_id=1, replica_groups={1}, use_global_device_ids=true, to_apply=%sum
  ROOT %out = (s32[], bf16[512,512]{{1,0}}) tuple(%next, %r)
}}
ENTRY %main (x: bf16[512,512]) -> bf16[512,512] {{
  %zero = s32[] constant(0)
  %x = bf16[512,512]{{1,0}} parameter(0)
  %init = (s32[], bf16[512,512]{{1,0}}) tuple(%zero, %x)
  %loop = (s32[], bf16[512,512]{{1,0}}) while(%init), condition=%cond, body=%body
  ROOT %res = bf16[512,512]{{1,0}} get-tuple-element(%loop), index=1
}})",
                     trips, groups);
}

TEST(Simulator, WhileLoopMultipliesItsBody) {
  const hw::System system = ring_system(8);
  // Each iteration's dot needs the previous iteration's all-reduce (loop
  // state); only the counter add (A) does not, so from the second iteration
  // on it runs under the previous all-reduce. With D the dot and R the
  // all-reduce: step(n) = A + n (D + R), so step(5) = step(1) + 4 (step(1) - A).
  const Timeline one = run(program_from_hlo(while_program(1)), system);
  const Timeline five = run(program_from_hlo(while_program(5)), system);
  const auto add = std::find_if(one.ops.begin(), one.ops.end(),
                                [](const OpRecord& r) { return r.name == "next"; });
  ASSERT_NE(add, one.ops.end());
  const double a = add->seconds;
  EXPECT_GT(a, 0);
  EXPECT_NEAR(five.step_time_s, one.step_time_s + 4 * (one.step_time_s - a), 1e-11);
  // The all-reduce is exposed in every iteration, less the add it hides.
  EXPECT_NEAR(five.exposed_communication_s, 5 * one.exposed_communication_s - 4 * a, 1e-11);
  const auto dot = std::find_if(five.ops.begin(), five.ops.end(),
                                [](const OpRecord& r) { return r.name == "d"; });
  ASSERT_NE(dot, five.ops.end());
  EXPECT_EQ(dot->executions, 5);
  EXPECT_EQ(five.collectives.at(0).count, 5);
  // The counter add is compute too: 2 ops x 5 iterations, the rest free.
  double compute = 0;
  for (const OpRecord& r : five.ops)
    if (!r.collective) compute += r.seconds;
  EXPECT_NEAR(five.compute_s, compute, 1e-11);
}

// The steady-state run's accounts against the every-iteration run's: the
// step's parts, and op by op the same executions (counted-out iterations
// still count) and the same seconds.
void expect_same_accounts(const Timeline& steady, const Timeline& whole) {
  const double tolerance = 1e-9 * whole.step_time_s;
  EXPECT_NEAR(steady.step_time_s, whole.step_time_s, tolerance);
  EXPECT_NEAR(steady.exposed_communication_s, whole.exposed_communication_s, tolerance);
  EXPECT_NEAR(steady.idle_s, whole.idle_s, tolerance);
  EXPECT_NEAR(steady.compute_s, whole.compute_s, tolerance);
  ASSERT_EQ(steady.ops.size(), whole.ops.size());
  for (const OpRecord& w : whole.ops) {
    const auto s = std::find_if(steady.ops.begin(), steady.ops.end(),
                                [&](const OpRecord& r) { return r.name == w.name; });
    ASSERT_NE(s, steady.ops.end()) << w.name;
    EXPECT_EQ(s->executions, w.executions) << w.name;
    EXPECT_NEAR(s->seconds, w.seconds, 1e-9 * whole.step_time_s) << w.name;
  }
}

TEST(Simulator, SteadyLoopIsCountedWithoutSimulatingEveryIteration) {
  // 40 identical iterations: step(n) = A + n (D + R) (above) is linear in
  // n, so simulating 2, 3 and 4 iterations and counting the other 38 at the
  // steady iteration time gives the whole loop's time, op by op.
  const hw::System system = ring_system(8);
  const auto program = program_from_hlo(while_program(40));
  const Timeline whole = run_every_iteration(program, system);
  const Timeline steady = run(program, system);
  EXPECT_TRUE(whole.approximation_note.empty());
  EXPECT_NE(steady.approximation_note.find("steady"), std::string::npos)
      << steady.approximation_note;
  expect_same_accounts(steady, whole);
  EXPECT_DOUBLE_EQ(steady.executed_flops_per_device, whole.executed_flops_per_device);
  // A short loop (5 < 8 iterations) is simulated whole.
  EXPECT_TRUE(run(program_from_hlo(while_program(5)), system).approximation_note.empty());
}

TEST(Simulator, FullFidelitySteadyLoopMatchesEveryIterationOnEveryDevice) {
  // Full fidelity, 8 devices, 40 iterations: step(n) = A + n (D + R) on every
  // device (the loop above), so 2, 3 and 4 simulated iterations on the whole
  // machine plus 38 counted at the repeated iteration time give the
  // every-iteration answer; the note says which loop and how close the repeat was.
  const hw::System system = ring_system(8);
  const auto program = program_from_hlo(while_program(40));
  const Timeline whole = run_every_iteration(program, system, Fidelity::kFull);
  const Timeline steady = run(program, system, Fidelity::kFull);
  EXPECT_EQ(steady.fidelity, Fidelity::kFull);
  EXPECT_EQ(steady.devices_simulated, 1);  // the ring is one symmetry class
  EXPECT_EQ(whole.approximation_note.find("loop(s)"), std::string::npos);
  EXPECT_NE(steady.approximation_note.find("1 loop(s) of 40 iterations"), std::string::npos)
      << steady.approximation_note;
  EXPECT_NE(steady.approximation_note.find("every ICI link"), std::string::npos)
      << steady.approximation_note;
  expect_same_accounts(steady, whole);
  // Every device simulated, steady loops: the same.
  SimOptions per_device;
  per_device.fidelity = Fidelity::kFull;
  per_device.symmetry = false;
  const Timeline steady_per_device = simulate(program, system, per_device);
  EXPECT_EQ(steady_per_device.devices_simulated, 8);
  expect_same_accounts(steady_per_device, whole);
  // A traced full run simulates every iteration (the trace needs them all).
  SimOptions traced;
  traced.fidelity = Fidelity::kFull;
  traced.record_trace = true;
  const Timeline with_trace = simulate(program, system, traced);
  EXPECT_EQ(with_trace.approximation_note.find("loop(s)"), std::string::npos)
      << with_trace.approximation_note;
  EXPECT_EQ(with_trace.devices_simulated, 8);  // a trace shows every device
  EXPECT_DOUBLE_EQ(with_trace.step_time_s, whole.step_time_s);
}

TEST(Simulator, FullFidelityLoopWhoseMachineDoesNotRepeatIsSimulatedWhole) {
  // The 8-device slice without wraparound (AsymmetricGroupsFallBackToFull):
  // pairs {0,7} across the diagonal and {1,2} neighbours take different
  // times, so the pairs' iterations drift against each other over links
  // they share: no iteration starts in the state of the previous one, the
  // repeat test fails at every K and every iteration is simulated.
  const hw::System system = make_system({8});
  const auto program = program_from_hlo(while_program(40, "{{0,7},{1,2},{3,4},{5,6}}"));
  EXPECT_FALSE(run(program, system, Fidelity::kFast).fallback_reason.empty());
  const Timeline whole = run_every_iteration(program, system, Fidelity::kFull);
  const Timeline steady = run(program, system, Fidelity::kFull);
  // Symmetry classes: a step along dim 0 of the 2x2 chips maps {0,7} onto {3,4} and {1,2} onto
  // {5,6} (AsymmetricGroupsFallBackToFull): 4 classes, which drift against each other.
  EXPECT_EQ(steady.devices_simulated, 4);
  EXPECT_EQ(steady.approximation_note.find("loop(s)"), std::string::npos)
      << steady.approximation_note;
  EXPECT_DOUBLE_EQ(steady.step_time_s, whole.step_time_s);
}

// Dots and collectives over a mesh: all-reduce over the inner axis,
// all-gather over the outer axis, an all-reduce over every device.
std::string mesh_program(int outer, int inner) {
  const int n = outer * inner;
  return fmt::format(R"(HloModule mesh, num_partitions={0}
%sum (x: bf16[], y: bf16[]) -> bf16[] {{
  %x = bf16[] parameter(0)
  %y = bf16[] parameter(1)
  ROOT %add = bf16[] add(%x, %y)
}}
ENTRY %main (a: bf16[512,1024], w: bf16[1024,1024]) -> bf16[{3},1024] {{
  %a = bf16[512,1024]{{1,0}} parameter(0)
  %w = bf16[1024,1024]{{1,0}} parameter(1)
  %h = bf16[512,1024]{{1,0}} dot(%a, %w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  %r = bf16[512,1024]{{1,0}} all-reduce(%h), channel_id=1, replica_groups=[{1},{2}]<=[{0}], use_global_device_ids=true, to_apply=%sum
  %h2 = bf16[512,1024]{{1,0}} dot(%r, %w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  %e = bf16[512,1024]{{1,0}} tanh(%h2)
  %g = bf16[{3},1024]{{1,0}} all-gather(%e), channel_id=2, replica_groups=[{2},{1}]<=[{1},{2}]T(1,0), dimensions={{0}}, use_global_device_ids=true
  %h3 = bf16[{3},1024]{{1,0}} dot(%g, %w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  ROOT %r2 = bf16[{3},1024]{{1,0}} all-reduce(%h3), channel_id=3, replica_groups=[1,{0}]<=[{0}], use_global_device_ids=true, to_apply=%sum
}})",
                     n, outer, inner, 512 * outer);
}

struct MeshCase {
  std::vector<int64_t> mesh;
  int outer, inner;
};

TEST(Simulator, FastAgreesWithFullOnSymmetricMeshes) {
  for (const MeshCase& c : {MeshCase{{8}, 1, 8}, MeshCase{{2, 4}, 2, 4}, MeshCase{{4, 4}, 4, 4}}) {
    const hw::System system = make_system(c.mesh);
    const auto program = program_from_hlo(mesh_program(c.outer, c.inner));
    const Timeline fast = run(program, system, Fidelity::kFast);
    const Timeline full = run(program, system, Fidelity::kFull);
    SCOPED_TRACE(fmt::format("mesh {}x{}", c.outer, c.inner));
    EXPECT_TRUE(fast.fallback_reason.empty()) << fast.fallback_reason;
    EXPECT_EQ(fast.fidelity, Fidelity::kFast);
    // By symmetry class or per device, full fidelity gives the same step (sim/symmetry.h).
    SimOptions per_device;
    per_device.fidelity = Fidelity::kFull;
    per_device.symmetry = false;
    const Timeline every = simulate(program, system, per_device);
    EXPECT_EQ(every.devices_simulated, c.outer * c.inner);
    EXPECT_LT(full.devices_simulated, every.devices_simulated);
    EXPECT_NEAR(full.step_time_s, every.step_time_s, 1e-9 * every.step_time_s);
    EXPECT_GT(fast.exposed_communication_s, 0);  // the program waits on its collectives
    EXPECT_NEAR(fast.step_time_s, full.step_time_s, 0.02 * full.step_time_s);
    EXPECT_NEAR(fast.compute_s, full.compute_s, 1e-11);  // same ops, same costs
  }
}

TEST(Simulator, TimeAccountingSumsToStepTime) {
  const hw::System system = make_system({2, 4});
  const auto program = program_from_hlo(mesh_program(2, 4));
  for (Fidelity f : {Fidelity::kFast, Fidelity::kFull}) {
    const Timeline t = run(program, system, f);
    EXPECT_NEAR(t.compute_s + t.exposed_communication_s + t.idle_s, t.step_time_s, 1e-12 * 10);
    EXPECT_NEAR(t.mxu_bound_s + t.vpu_bound_s + t.hbm_bound_s + t.overhead_s, t.compute_s,
                1e-12 * 10);
    EXPECT_GT(t.mxu_bound_s, 0);
    EXPECT_GT(t.overhead_s, 0);  // every op pays the issue overhead
  }
}

TEST(Simulator, AsymmetricGroupsFallBackToFull) {
  // Default 8-device slice of a v3 pod: 2x2 chips, 2 devices each, no
  // wraparound. Pairs {0,7} span the slice's diagonal, {1,2} are neighbours:
  // alone they take different times, so fast cannot be exact.
  const hw::System system = make_system({8});
  const auto program = program_from_hlo(R"(HloModule asym, num_partitions=8
%sum (x: bf16[], y: bf16[]) -> bf16[] {
  %x = bf16[] parameter(0)
  %y = bf16[] parameter(1)
  ROOT %add = bf16[] add(%x, %y)
}
ENTRY %main (p: bf16[1024,1024]) -> bf16[1024,1024] {
  %p = bf16[1024,1024]{1,0} parameter(0)
  ROOT %ar = bf16[1024,1024]{1,0} all-reduce(%p), channel_id=1, replica_groups={{0,7},{1,2},{3,4},{5,6}}, to_apply=%sum
})");
  const Timeline t = run(program, system, Fidelity::kFast);
  EXPECT_EQ(t.fidelity, Fidelity::kFull);
  // Full by symmetry class: a step along dim 0 (chips (0,c) -> (1,c)) maps device 0 (chip 0,
  // core 0) onto 4 and 7 (chip 3, core 1) onto 3, i.e. {0,7} onto {3,4}, and {1,2} onto {5,6};
  // dim 1 maps {0,7} onto {2,5}, no group. 8 devices / 2 translates = 4 classes.
  EXPECT_EQ(t.devices_simulated, 4);
  EXPECT_NE(t.fallback_reason.find("not symmetric"), std::string::npos) << t.fallback_reason;
  EXPECT_NE(t.simulated_devices.find("4 symmetry classes"), std::string::npos) << t.simulated_devices;
}

TEST(Simulator, AllReduceTakesTheFasterOfMeshAndPhysicalOrder) {
  // 16 devices on a 4x4-chip slice (one device per chip, no wraparound: a
  // corner of the 32x32 pod), placed as a snake so that mesh order is a path
  // of one-hop neighbours but not a row-major grid. A scalar all-reduce is
  // latency-bound: one 16-member ring costs about n/2 steps per pass, the
  // per-dimension torus passes over the physical [4,4] grid about 2 + 2, so
  // the catalog must pick the physical order (the bytes moved are the same
  // whatever the order: chunk ownership is a relabelling).
  hw::MeshLayout layout;
  layout.mesh_shape = {16};
  layout.physical = {4, 4, 1};
  layout.order = hw::PlacementOrder::kExplicit;
  layout.explicit_devices = {0, 1, 2, 3, 7, 6, 5, 4, 8, 9, 10, 11, 15, 14, 13, 12};
  const hw::System system(hw::load_hardware("tpuv3", {{"chip.devices_per_chip", "1"}}), layout);
  hw::CollectiveQuery ring;
  ring.kind = hw::CollectiveKind::kAllReduce;
  ring.bytes_per_device = 2;
  ring.group = layout.explicit_devices;
  hw::CollectiveQuery torus = ring;
  torus.group = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  torus.group_shape = {4, 4};
  const double ring_s = system.plan(ring).analytic_time_s;
  const double torus_s = system.plan(torus).analytic_time_s;
  ASSERT_LT(torus_s, ring_s);
  const Timeline t =
      run(program_from_hlo(all_reduce_program(16, "bf16[]")), system, Fidelity::kFast);
  EXPECT_NEAR(t.step_time_s, torus_s, 1e-12);

  // A bandwidth-bound all-reduce keeps whichever order is faster too: never
  // slower than the mesh-order ring.
  hw::CollectiveQuery big_ring = ring;
  big_ring.bytes_per_device = 64.0 * 1024 * 1024 * 2;
  const Timeline big =
      run(program_from_hlo(all_reduce_program(16, "bf16[64,1024,1024]")), system, Fidelity::kFast);
  EXPECT_LE(big.step_time_s, system.plan(big_ring).analytic_time_s + 1e-12);
}

TEST(Simulator, TraceHasComputeCollectiveAndLinkTracks) {
  const hw::System system = ring_system(8);
  const Timeline fast = run(program_from_hlo(overlap_program(true)), system, Fidelity::kFast, true);
  // One device: the dot on "compute", the all-reduce on "collectives all-reduce".
  ASSERT_EQ(fast.events.size(), 2u);
  const Timeline full = run(program_from_hlo(overlap_program(true)), system, Fidelity::kFull, true);
  int64_t compute = 0, collectives = 0;
  for (const TraceEvent& e : full.events) {
    if (e.track == "compute")
      ++compute;
    else if (e.track == "collectives all-reduce")
      ++collectives;
  }
  EXPECT_EQ(compute, 8);
  EXPECT_EQ(collectives, 8);
  EXPECT_GT(full.link_loads.size(), 0u);  // the ring's links, as utilisation intervals
  EXPECT_GT(full.kernel_events, fast.kernel_events);
}

TEST(Simulator, ProgressReachesOne) {
  const hw::System system = ring_system(8);
  SimOptions options;
  double last = -1;
  int calls = 0;
  options.progress = [&](double f) {
    EXPECT_GE(f, last);
    last = f;
    ++calls;
  };
  simulate(program_from_hlo(while_program(3)), system, options);
  EXPECT_GT(calls, 1);
  EXPECT_EQ(last, 1.0);
}

// Full fidelity counts every device's steps: the fractions rise in about 1%
// strides from 0 and end at exactly 1 (the simulator's last call).
TEST(Simulator, FullFidelityProgressIsMonotoneAndEndsAtOne) {
  const hw::System system = ring_system(8);
  SimOptions options;
  options.fidelity = Fidelity::kFull;
  std::vector<double> seen;
  options.progress = [&](double f) { seen.push_back(f); };
  simulate(program_from_hlo(while_program(3)), system, options);
  ASSERT_GT(seen.size(), 2u);
  EXPECT_EQ(seen.front(), 0.0);  // the first device at its first step
  for (size_t i = 1; i < seen.size(); ++i) {
    EXPECT_GE(seen[i], seen[i - 1]) << "call " << i;
    EXPECT_LE(seen[i], 1.0) << "call " << i;
  }
  EXPECT_EQ(seen.back(), 1.0);
  EXPECT_LT(seen[seen.size() - 2], 1.0);  // the engine's own calls stop short of the end
}

TEST(Simulator, DeviceCountMismatchIsUserError) {
  const hw::System system = ring_system(4);
  EXPECT_THROW(run(program_from_hlo(all_reduce_program(8, "bf16[16]")), system), UserError);
}

// Every reader form fixture (tests/fixtures/hlo/forms: one small module per
// XLA opcode, element type or syntax form) compiles as-is and simulates on
// as many devices as its HloModule line names, in both fidelities: a finite
// step, positive for every form with a kernel or a transfer, and exactly 0
// for the forms made only of views and markers (bitcast, opt-barrier,
// after-all/add-dependency/domain, a tuple of parameters, a conditional
// whose first branch, the one podsim runs, only builds a tuple).
const std::set<std::string> kFreeForms = {"bitcast", "opt_barrier", "dependency_domain",
                                          "index_comments", "conditional_index"};

class FormSimulation : public ::testing::TestWithParam<std::string> {};

TEST_P(FormSimulation, EveryFormIsCostedAsIs) {
  const compiler::Module m = compiler::parse_hlo_file(GetParam());
  const int64_t devices = std::max(m.num_partitions(), m.replica_count());
  const compiler::SpmdProgram program = compiler::compile_as_is(m, devices);
  const hw::System system = make_system({devices});
  const bool free = kFreeForms.count(std::filesystem::path(GetParam()).stem().string()) > 0;
  for (Fidelity fidelity : {Fidelity::kFast, Fidelity::kFull}) {
    const Timeline t = run(program, system, fidelity);
    EXPECT_TRUE(std::isfinite(t.step_time_s)) << GetParam();
    if (free) {
      EXPECT_EQ(t.step_time_s, 0) << GetParam();
    } else {
      EXPECT_GT(t.step_time_s, 0) << GetParam();
    }
  }
}

std::vector<std::string> form_paths() {
  return podsim::testing::hlo_fixture_paths(/*forms_only=*/true);
}

INSTANTIATE_TEST_SUITE_P(Forms, FormSimulation, ::testing::ValuesIn(form_paths()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return std::filesystem::path(info.param).stem().string();
                         });

// Multi-slice (docs/collectives.md#multi-slice-collectives): 2 slices, each a closed ring of 4
// chips (one device per chip), DCN at kDcnBandwidth per chip per direction and kDcnLatency per
// transfer. One collective per program, nothing computing: the step is the collective.
constexpr double kDcnBandwidth = 2e9;
constexpr double kDcnLatency = 1e-5;

hw::System two_slices_of_rings() {
  hw::MeshLayout layout;
  layout.mesh_shape = {4};
  layout.slices = 2;
  return hw::System(hw::load_hardware("tpuv3", {{"ici.pod_dims", "[4]"},
                                                {"ici.pod_wraparound", "[true]"},
                                                {"chip.devices_per_chip", "1"},
                                                {"dcn.bandwidth_per_chip", "2e9"},
                                                {"dcn.latency_s", "1e-5"}}),
                    layout);
}

std::string one_collective(const std::string& op, const std::string& operand,
                           const std::string& result, const std::string& groups) {
  return fmt::format(R"(HloModule one, num_partitions=8
%sum (x: bf16[], y: bf16[]) -> bf16[] {{
  %x = bf16[] parameter(0)
  %y = bf16[] parameter(1)
  ROOT %add = bf16[] add(%x, %y)
}}
ENTRY %main (p: {1}) -> {2} {{
  %p = {1} parameter(0)
  ROOT %c = {2} {0}(%p), channel_id=1, replica_groups={3}, use_global_device_ids=true{4}
}})",
                     op, operand, result, groups,
                     op == "all-reduce" || op == "reduce-scatter"
                         ? ", to_apply=%sum, dimensions={0}"
                     : op == "all-gather" || op == "all-to-all" ? ", dimensions={0}"
                                                                : "");
}

// With k = 4 members per slice, n = 2 slices, a bidirectional ring inside a slice
// (half(V) = (k-1)/k V/(2W) + k/2 hops, one reduce-scatter or all-gather pass) and a ring of
// n - 1 (all-reduce: 2(n - 1)) steps of (V/k)/n across slices, each V/(k n B) + L:
//   all-reduce over all 8     = 2 half(V) + 2(n-1) (V/(k n B) + L)
//   all-reduce over {i, i+4}  = 2(n-1) (V/(n B) + L)     (one member per slice: DCN only)
//   all-gather over all 8     = (n-1) (V/(k n B) + L) + half(V)   (V = the full result)
//   reduce-scatter over all 8 = half(V) + (n-1) (V/(k n B) + L)   (V = the full operand)
// in both fidelities; the DCN part is reported as DCN busy time.
TEST(Simulator, CollectivesAcrossSlicesTakeTheirHierarchicalClosedForms) {
  const hw::System system = two_slices_of_rings();
  const double k = 4, n = 2;
  auto half = [&](double v) {
    return (k - 1) / k * v / (2 * kLinkBandwidth) + k / 2 * kHopLatency;
  };
  auto dcn = [&](double v, double steps) { return steps * (v / n / kDcnBandwidth + kDcnLatency); };
  const double small = 1024.0 * 1024 * 2, big = 8 * small;  // bf16[1024,1024], bf16[8192,1024]
  const std::string all = "[1,8]<=[8]", columns = "[4,2]<=[2,4]T(1,0)";
  const struct {
    std::string op, operand, result, groups;
    double want, want_dcn;
  } cases[] = {
      {"all-reduce", "bf16[1024,1024]", "bf16[1024,1024]", all,
       2 * half(small) + dcn(small / k, 2 * (n - 1)), dcn(small / k, 2 * (n - 1))},
      {"all-reduce", "bf16[1024,1024]", "bf16[1024,1024]", columns, dcn(small, 2 * (n - 1)),
       dcn(small, 2 * (n - 1))},
      {"all-gather", "bf16[1024,1024]", "bf16[8192,1024]", all, dcn(big / k, n - 1) + half(big),
       dcn(big / k, n - 1)},
      {"reduce-scatter", "bf16[8192,1024]", "bf16[1024,1024]", all, half(big) + dcn(big / k, n - 1),
       dcn(big / k, n - 1)},
  };
  for (const auto& c : cases) {
    const auto program = program_from_hlo(one_collective(c.op, c.operand, c.result, c.groups));
    for (Fidelity f : {Fidelity::kFast, Fidelity::kFull}) {
      const Timeline t = run(program, system, f);
      const std::string what = c.op + " " + c.groups + " " + fidelity_name(f);
      EXPECT_NEAR(t.step_time_s, c.want, 1e-9 * c.want) << what;
      EXPECT_NEAR(t.dcn_busy_s, c.want_dcn, 1e-9 * c.want_dcn) << what;
      // Nothing computes: all of it is exposed, its DCN share as exposed DCN time.
      EXPECT_NEAR(t.exposed_communication_s, t.step_time_s, 1e-12) << what;
      EXPECT_NEAR(t.exposed_dcn_s, c.want_dcn, 1e-9 * c.want_dcn) << what;
      // Full: one symmetry class per slice (translations move chips inside every slice at once).
      EXPECT_EQ(t.devices_simulated, f == Fidelity::kFast ? 1 : 2);
    }
  }
}

// An all-to-all across slices: its in-slice part (the direct all-to-all of the ring of 4) then
// V/n to the other slice's column member, (n-1) V/(n B) + L; fast and full agree.
TEST(Simulator, AllToAllAcrossSlicesAddsItsDcnExchange) {
  const hw::System system = two_slices_of_rings();
  const double v = 8.0 * 1024 * 128 * 2;  // bf16[8,1024,128]
  const auto program = program_from_hlo(
      one_collective("all-to-all", "bf16[8,1024,128]", "bf16[8,1024,128]", "[1,8]<=[8]"));
  const double want_dcn = (2 - 1) * v / 2 / kDcnBandwidth + kDcnLatency;
  const Timeline fast = run(program, system, Fidelity::kFast);
  const Timeline full = run(program, system, Fidelity::kFull);
  EXPECT_NEAR(fast.dcn_busy_s, want_dcn, 1e-9 * want_dcn);
  EXPECT_NEAR(full.step_time_s, fast.step_time_s, 1e-9 * fast.step_time_s);
  EXPECT_GT(fast.step_time_s, want_dcn);  // plus the in-slice exchange
}

// A collective across slices is asynchronous whatever the program's flags: an independent dot
// runs under it (the step is the longer of the two, not their sum), as the data-parallel
// gradient reduction runs under the backward pass.
TEST(Simulator, CollectivesAcrossSlicesOverlapIndependentCompute) {
  const hw::System system = two_slices_of_rings();
  const auto program = program_from_hlo(R"(HloModule overlap, num_partitions=8
%sum (x: bf16[], y: bf16[]) -> bf16[] {
  %x = bf16[] parameter(0)
  %y = bf16[] parameter(1)
  ROOT %add = bf16[] add(%x, %y)
}
ENTRY %main (p: bf16[1024,1024], a: bf16[4096,4096]) -> (bf16[1024,1024], bf16[4096,4096]) {
  %p = bf16[1024,1024] parameter(0)
  %a = bf16[4096,4096] parameter(1)
  %ar = bf16[1024,1024] all-reduce(%p), channel_id=1, replica_groups=[4,2]<=[2,4]T(1,0), use_global_device_ids=true, to_apply=%sum
  %d = bf16[4096,4096] dot(%a, %a), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %t = (bf16[1024,1024], bf16[4096,4096]) tuple(%ar, %d)
})");
  compiler::SpmdProgram sync = program;
  sync.collectives.async.clear();  // every kind synchronous, as TPU v4's MaxText flags leave
  ASSERT_FALSE(sync.collectives.is_async(compiler::Opcode::kAllReduce));  // all-reduce
  for (Fidelity f : {Fidelity::kFast, Fidelity::kFull}) {
    const Timeline t = run(sync, system, f);
    const double ar = 2 * (1024.0 * 1024 * 2 / 2 / kDcnBandwidth + kDcnLatency);
    EXPECT_LT(t.step_time_s, t.compute_s + ar - 1e-6) << fidelity_name(f);
    EXPECT_GE(t.step_time_s, std::max(t.compute_s, ar) - 1e-12) << fidelity_name(f);
  }
}

// The trace shows DCN traffic as its own kind: the collective's event carries its DCN busy time
// (the closed form above: one member per slice, 2(n-1) steps of V/(n B) + L) and the chips' DCN
// links appear as link counters named "dcn ...", in both fidelities.
TEST(Simulator, TraceNamesDcnLinksAndDcnBusyTime) {
  const hw::System system = two_slices_of_rings();
  const auto program = program_from_hlo(
      one_collective("all-reduce", "bf16[1024,1024]", "bf16[1024,1024]", "[4,2]<=[2,4]T(1,0)"));
  const double want = 2 * (1024.0 * 1024 * 2 / 2 / kDcnBandwidth + kDcnLatency);
  for (Fidelity f : {Fidelity::kFast, Fidelity::kFull}) {
    const Timeline t = run(program, system, f, /*trace=*/true);
    bool event = false, link = false;
    for (const TraceEvent& e : t.events)
      for (const auto& [key, value] : e.numbers)
        if (key == "dcn_busy_s") {
          event = true;
          EXPECT_NEAR(value, want, 1e-9 * want);
        }
    for (const LinkLoad& l : t.link_loads) link = link || l.link.rfind("dcn ", 0) == 0;
    EXPECT_TRUE(event) << fidelity_name(f);
    EXPECT_TRUE(link) << fidelity_name(f);
  }
}


// A collective-permute between slices routes each pair over the sender's DCN link out and the
// receiver's in: every pair at once on its own chips' links, V/B + L, in both fidelities.
TEST(Simulator, CollectivePermuteAcrossSlicesTakesOneDcnTransfer) {
  const hw::System system = two_slices_of_rings();
  const auto program = program_from_hlo(R"(HloModule permute, num_partitions=8
ENTRY %main (p: bf16[1024,1024]) -> bf16[1024,1024] {
  %p = bf16[1024,1024] parameter(0)
  ROOT %c = bf16[1024,1024] collective-permute(%p), channel_id=1, source_target_pairs={{0,4},{1,5},{2,6},{3,7},{4,0},{5,1},{6,2},{7,3}}
})");
  const double want = 1024.0 * 1024 * 2 / kDcnBandwidth + kDcnLatency;
  for (Fidelity f : {Fidelity::kFast, Fidelity::kFull}) {
    const Timeline t = run(program, system, f);
    EXPECT_NEAR(t.step_time_s, want, 1e-9 * want) << fidelity_name(f);
    EXPECT_NEAR(t.dcn_busy_s, want, 1e-9 * want) << fidelity_name(f);
  }
}

}  // namespace
}  // namespace podsim::sim

namespace podsim::sim {
namespace {

// ---- per-chip overrides: one slow chip (docs/simulator.md#one-slow-chip) ----

// ring_system(8) (one device per chip, so chip c holds device c) with more overrides.
hw::System ring8(hw::Overrides more = {}) {
  hw::Overrides overrides = {
      {"ici.pod_dims", "[8]"}, {"ici.pod_wraparound", "[true]"}, {"chip.devices_per_chip", "1"}};
  overrides.insert(overrides.end(), more.begin(), more.end());
  return make_system({8}, overrides);
}

// One kernel per device and no collective: `op` on two bf16[2048,2048] parameters.
std::string solo_program(const std::string& op) {
  return fmt::format(R"(HloModule solo, num_partitions=8
ENTRY %main (p: bf16[2048,2048], a: bf16[2048,2048]) -> bf16[2048,2048] {{
  %p = bf16[2048,2048]{{1,0}} parameter(0)
  %a = bf16[2048,2048]{{1,0}} parameter(1)
  ROOT %k = bf16[2048,2048]{{1,0}} {}
}})",
                     op);
}

TEST(SimulatorChipOverrides, OneSlowChipWithoutCollectivesTakesItsOwnKernelTime) {
  // No collective: each device runs its kernel alone and the step is the slowest device's. A
  // chip with a per-chip key runs its kernel as the whole machine with that key does (an
  // independent run): a dot (MXU-bound) on chip 3 at half clock, an add (HBM-bound) on chip 3
  // at half HBM bandwidth. Fast falls back to full and says why.
  struct Case {
    std::string op, key, value;
  };
  for (const Case& c : {Case{"dot(%p, %a), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
                             "core.clock_hz", "4.7e8"},
                        Case{"add(%p, %a)", "hbm.bandwidth", "2.25e11"}}) {
    SCOPED_TRACE(c.key);
    const auto program = program_from_hlo(solo_program(c.op));
    const Timeline one = run(program, ring8({{"chips.3." + c.key, c.value}}), Fidelity::kFast);
    const Timeline all = run(program, ring8({{c.key, c.value}}), Fidelity::kFast);
    const Timeline base = run(program, ring8(), Fidelity::kFast);
    EXPECT_EQ(one.fidelity, Fidelity::kFull);
    EXPECT_EQ(one.devices_simulated, 8);
    EXPECT_NE(one.fallback_reason.find("chips differ"), std::string::npos) << one.fallback_reason;
    EXPECT_EQ(all.fidelity, Fidelity::kFast);            // every chip alike: fast stays exact
    EXPECT_GT(all.step_time_s, 1.5 * base.step_time_s);  // premise: the key bounds the kernel
    EXPECT_NEAR(one.step_time_s, all.step_time_s, 1e-9 * all.step_time_s);
    EXPECT_NEAR(one.compute_s, all.compute_s, 1e-9 * all.step_time_s);
    EXPECT_EQ(one.idle_s, 0);  // nothing waits on anyone
  }
  // The dot is MXU-bound at both clocks: half the clock doubles its MXU cycles' time, its fixed
  // costs f (op overhead and first HBM access, core_model.cc) stay: step - f = 2 (dot - f).
  const hw::System base = ring8();
  const double o = base.config().core.op_overhead_s + base.config().hbm.latency_s;
  const Timeline slow = run(program_from_hlo(solo_program(
                                "dot(%p, %a), lhs_contracting_dims={1}, rhs_contracting_dims={0}")),
                            ring8({{"chips.3.core.clock_hz", "4.7e8"}}));
  EXPECT_NEAR(slow.step_time_s - o, 2 * (dot_2048_s(base) - o), 1e-11);
  EXPECT_EQ(slow.per_device, "chip 3 (device 3) core.clock_hz 4.7e8 of 9.4e8");
}

// A data-parallel step on 8 devices: the dot d of the parameters, `more` (kernels after it), then
// the all-reduce of `reduced`.
std::string data_parallel_program(const std::string& more = "", const std::string& reduced = "d") {
  return fmt::format(R"(HloModule dp, num_partitions=8
%sum (x: bf16[], y: bf16[]) -> bf16[] {{
  %x = bf16[] parameter(0)
  %y = bf16[] parameter(1)
  ROOT %add = bf16[] add(%x, %y)
}}
ENTRY %main (p: bf16[2048,2048], a: bf16[2048,2048]) -> bf16[2048,2048] {{
  %p = bf16[2048,2048]{{1,0}} parameter(0)
  %a = bf16[2048,2048]{{1,0}} parameter(1)
  %d = bf16[2048,2048]{{1,0}} dot(%p, %a), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  {}ROOT %ar = bf16[2048,2048]{{1,0}} all-reduce(%{}), channel_id=1, replica_groups=[1,8]<=[8], use_global_device_ids=true, to_apply=%sum
}})",
                     more, reduced);
}

// Each device's dot, then the all-reduce of its result.
std::string dot_then_all_reduce_program() { return data_parallel_program(); }

TEST(SimulatorChipOverrides, AllReduceWaitsForTheSlowChipAndTheOthersIdle) {
  // The all-reduce starts when the last member's dot ends: with D the dot at 9.4e8 Hz, D' at
  // 4.7e8 Hz (chip 3) and R the ring all-reduce (closed form), step = D' + R. The fast devices
  // compute D and idle D' - D (their all-reduce waits for device 3), the slow one computes D'
  // and idles 0: either way compute + idle = D' and the exposed part is R.
  const auto program = program_from_hlo(dot_then_all_reduce_program());
  const hw::System slow = ring8({{"chips.3.core.clock_hz", "4.7e8"}});
  const double d = dot_2048_s(ring8());
  const double d_slow = dot_2048_s(ring8({{"core.clock_hz", "4.7e8"}}));
  const double r = ring_all_reduce_s(2048.0 * 2048 * 2, 8);
  ASSERT_GT(d_slow, 1.5 * d);  // premise: the dot is clock-bound
  const Timeline base = run(program, ring8(), Fidelity::kFull);
  EXPECT_NEAR(base.step_time_s, d + r, 1e-11);
  const Timeline t = run(program, slow, Fidelity::kFull, /*trace=*/true);
  EXPECT_NEAR(t.step_time_s, d_slow + r, 1e-11);
  EXPECT_NEAR(t.compute_s + t.idle_s, d_slow, 1e-11);
  EXPECT_NEAR(t.exposed_communication_s, r, 1e-11);
  EXPECT_EQ(t.fallback_reason, "");  // full was asked for
  EXPECT_EQ(t.per_device, "chip 3 (device 3) core.clock_hz 4.7e8 of 9.4e8");
  // Per device, from the trace: the dot of device 3 takes D', every other device's D; the
  // all-reduce of every device ends at D' + R.
  int dots = 0;
  for (const TraceEvent& e : t.events) {
    if (e.track == "compute" && e.name == "d") {
      ++dots;
      EXPECT_NEAR(e.duration_s, e.device == 3 ? d_slow : d, 1e-11) << e.device;
    }
    if (e.track.starts_with("collectives") && e.name == "ar") {
      EXPECT_NEAR(e.start_s + e.duration_s, d_slow + r, 1e-11) << e.device;
    }
  }
  EXPECT_EQ(dots, 8);
}

// An MXU-bound kernel (the dot d), an HBM-bound one reading it (the add e), then the all-reduce
// of the second.
std::string dot_add_all_reduce_program() {
  return data_parallel_program("%e = bf16[2048,2048]{1,0} add(%d, %a)\n  ", "e");
}

// An op's busy time on the reported (slowest) device.
double op_seconds(const Timeline& t, const std::string& name) {
  for (const OpRecord& r : t.ops)
    if (r.name == name) return r.seconds;
  ADD_FAILURE() << "no op " << name;
  return 0;
}

TEST(SimulatorChipOverrides, EachKernelOfTheSlowChipTakesItsOwnCost) {
  // Dot d (MXU-bound), add e (HBM-bound), all-reduce R. With D, E the kernels on the machine's
  // chip and D', E' on the whole machine at the override's value, chip 3's kernels are D' and E'
  // each (costed on its own config), the others' D and E: the all-reduce waits for device 3, so
  // step = D' + E' + R, the whole machine's at that value, and so is the slow device's time split
  // (mxu / vpu / hbm-bound, overhead; the reported device is the one the others wait for). A clock
  // halved stretches the dot by about 2 and leaves the add (E' = E); half HBM bandwidth stretches
  // the add and leaves the dot (D' = D). One factor per device, (D' + E') / (D + E), would give
  // the dot (D' + E') D / (D + E) != D' instead.
  struct Case {
    std::string key, value;
    bool clock;
  };
  const auto program = program_from_hlo(dot_add_all_reduce_program());
  const Timeline base = run(program, ring8(), Fidelity::kFull);
  const double d = op_seconds(base, "d"), e = op_seconds(base, "e");
  for (const Case& c : {Case{"core.clock_hz", "4.7e8", true},
                        Case{"hbm.bandwidth", "2.25e11", false}}) {
    SCOPED_TRACE(c.key);
    const Timeline all = run(program, ring8({{c.key, c.value}}), Fidelity::kFull);
    const double d_own = op_seconds(all, "d"), e_own = op_seconds(all, "e");
    // Premises: the key bounds one kernel and leaves the other.
    if (c.clock) {
      ASSERT_GT(d_own, 1.5 * d);
      ASSERT_NEAR(e_own, e, 1e-11);
    } else {
      ASSERT_NEAR(d_own, d, 1e-11);
      ASSERT_GT(e_own, 1.5 * e);
    }
    const Timeline one =
        run(program, ring8({{"chips.3." + c.key, c.value}}), Fidelity::kFull, /*trace=*/true);
    EXPECT_NEAR(op_seconds(one, "d"), d_own, 1e-11);
    EXPECT_NEAR(op_seconds(one, "e"), e_own, 1e-11);
    EXPECT_NEAR(one.step_time_s, all.step_time_s, 1e-11);
    EXPECT_NEAR(one.mxu_bound_s, all.mxu_bound_s, 1e-11);
    EXPECT_NEAR(one.vpu_bound_s, all.vpu_bound_s, 1e-11);
    EXPECT_NEAR(one.hbm_bound_s, all.hbm_bound_s, 1e-11);
    EXPECT_NEAR(one.overhead_s, all.overhead_s, 1e-11);
    EXPECT_NEAR(one.exposed_communication_s, all.exposed_communication_s, 1e-11);
    EXPECT_EQ(one.idle_s, 0);  // the slow device waits for no one
    // Per device, from the trace: device 3's kernels take D' and E', every other device's D, E.
    int kernels = 0;
    for (const TraceEvent& ev : one.events) {
      if (ev.track != "compute") continue;
      ++kernels;
      const double expected = ev.name == "d" ? (ev.device == 3 ? d_own : d)
                                             : (ev.device == 3 ? e_own : e);
      EXPECT_NEAR(ev.duration_s, expected, 1e-11) << ev.name << " " << ev.device;
    }
    EXPECT_EQ(kernels, 16);
  }
}

TEST(SimulatorChipOverrides, FullSteadyLoopMatchesEveryIterationOnEveryDevice) {
  // 40 iterations of dot -> all-reduce, chip 3 at half clock: every iteration waits for the slow
  // chip, the machine repeats, so the steady-state run (every device's iteration time checked)
  // equals the every-iteration run op by op; fast asked falls back to full and simulates every
  // iteration, the same answer.
  const hw::System system = ring8({{"chips.3.core.clock_hz", "4.7e8"}});
  const auto program = program_from_hlo(while_program(40));
  const Timeline whole = run_every_iteration(program, system, Fidelity::kFull);
  const Timeline steady = run(program, system, Fidelity::kFull);
  EXPECT_NE(steady.approximation_note.find("1 loop(s) of 40 iterations"), std::string::npos)
      << steady.approximation_note;
  EXPECT_NE(steady.approximation_note.find("every device"), std::string::npos);
  expect_same_accounts(steady, whole);
  const Timeline fast = run(program, system, Fidelity::kFast);
  EXPECT_EQ(fast.fidelity, Fidelity::kFull);
  EXPECT_NEAR(fast.step_time_s, whole.step_time_s, 1e-3 * whole.step_time_s);
  // The slow chip makes the step longer than the uniform machine's.
  EXPECT_GT(whole.step_time_s, run(program, ring8(), Fidelity::kFull).step_time_s);
}

TEST(SimulatorChipOverrides, AnOverrideThatChangesNothingKeepsFast) {
  // Chip 3 at the preset's own clock: every device alike, fast stays exact.
  const auto program = program_from_hlo(dot_then_all_reduce_program());
  const Timeline same = run(program, ring8({{"chips.3.core.clock_hz", "9.4e8"}}));
  EXPECT_EQ(same.fidelity, Fidelity::kFast);
  EXPECT_EQ(same.per_device, "");
  EXPECT_EQ(same.step_time_s, run(program, ring8()).step_time_s);
}

TEST(SimulatorChipOverrides, FastRefusesWhenFullIsTooLargeToFallBackTo) {
  // 8 devices x 3 million steps (a 1,000,000-trip loop of 3 steps: add, dot, all-reduce) is over
  // the 2e7 fast falls back to: a UserError naming --fidelity full, before any simulation.
  const auto program = program_from_hlo(while_program(1000000));
  try {
    run(program, ring8({{"chips.3.core.clock_hz", "4.7e8"}}), Fidelity::kFast);
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_NE(e.message().find("chips differ (chip 3 (device 3) core.clock_hz 4.7e8 of 9.4e8)"),
              std::string::npos)
        << e.message();
    EXPECT_NE(e.hint().find("--fidelity full"), std::string::npos) << e.hint();
  }
}

}  // namespace
}  // namespace podsim::sim
