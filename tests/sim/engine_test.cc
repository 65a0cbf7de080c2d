// The engine's dependency rule (step_program.h) at every in-flight setting:
// a collective does not start before the collectives it reads are done,
// a compute op waits for all of them, while independent collectives still
// overlap. Fast and full fidelity.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>
#include <vector>

#include "compiler/ir/trip_count.h"
#include "sim/engine.h"
#include "sim/op_cost.h"
#include "sim/step_program.h"
#include "sim/symmetry.h"
#include "tests/sim/sim_test_util.h"

namespace podsim::sim {
namespace {

using testing::kHopLatency;
using testing::kLinkBandwidth;
using testing::make_system;
using testing::program_from_hlo;
using testing::run;

constexpr const char* kSum = R"(%sum (x: bf16[], y: bf16[]) -> bf16[] {
  %x = bf16[] parameter(0)
  %y = bf16[] parameter(1)
  ROOT %add = bf16[] add(%x, %y)
})";

// 4x4 torus of chips closed in both dims, one device each, 16 devices in
// row-major order: x = groups of 4 consecutive devices ([4,4]<=[16], the
// links of the last dim), y = the columns ([4,4]<=[4,4]T(1,0), the first
// dim's links). Every group is a closed ring of 4 on links of its own.
hw::System torus_4x4(int64_t in_flight) {
  return make_system({16},
                     {{"ici.pod_dims", "[4, 4]"},
                      {"ici.pod_wraparound", "[true, true]"},
                      {"chip.devices_per_chip", "1"},
                      {"ici.collectives_in_flight", std::to_string(in_flight)},
                      {"ici.collectives_in_flight_per_kind", "1"}},
                     {4, 4, 1});
}

constexpr const char* kX = "replica_groups=[4,4]<=[16]";
constexpr const char* kY = "replica_groups=[4,4]<=[4,4]T(1,0)";

// Bidirectional ring all-gather or reduce-scatter over a closed ring of n
// (collectives.h): (n-1)/n x B / (2W) plus n/2 one-hop latencies, with B
// the full-size buffer (the all-gather's result, the reduce-scatter's
// operand) on each device.
double ring_pass_s(double bytes, int n) {
  return (n - 1.0) / n * bytes / (2 * kLinkBandwidth) + n / 2.0 * kHopLatency;
}

constexpr double kV = 2048.0 * 2048 * 2;  // bf16[2048,2048]

// The 2-D chain: reduce-scatter over x, reduce-scatter over y of its result,
// all-gather over y of that, all-gather over x; each reads the previous one
// through ops that cost nothing (bitcast, tuple + get-tuple-element,
// reshape).
std::string chain_program() {
  return fmt::format(R"(HloModule chain, num_partitions=16
{0}
ENTRY %main (p: bf16[2048,2048]) -> bf16[2048,2048] {{
  %p = bf16[2048,2048]{{1,0}} parameter(0)
  %rs1 = bf16[512,2048]{{1,0}} reduce-scatter(%p), channel_id=1, {1}, dimensions={{0}}, use_global_device_ids=true, to_apply=%sum
  %v1 = bf16[512,2048]{{1,0}} bitcast(%rs1)
  %rs2 = bf16[128,2048]{{1,0}} reduce-scatter(%v1), channel_id=2, {2}, dimensions={{0}}, use_global_device_ids=true, to_apply=%sum
  %t = (bf16[128,2048]{{1,0}}) tuple(%rs2)
  %g = bf16[128,2048]{{1,0}} get-tuple-element(%t), index=0
  %ag1 = bf16[512,2048]{{1,0}} all-gather(%g), channel_id=3, {2}, dimensions={{0}}, use_global_device_ids=true
  %v3 = bf16[512,2048]{{1,0}} reshape(%ag1)
  ROOT %ag2 = bf16[2048,2048]{{1,0}} all-gather(%v3), channel_id=4, {1}, dimensions={{0}}, use_global_device_ids=true
}})",
                     kSum, kX, kY);
}

TEST(Engine, ChainOfCollectivesOfDifferentKindsRunsInOrder) {
  // Each collective reads the one before, so they run one after another at
  // any in-flight limit and the step is the sum of the four ring passes
  // (n = 4): reduce-scatter of V (x), of V/4 (y), all-gather to V/4 (y),
  // to V (x):
  //   step = 3/4 x (V + V/4 + V/4 + V) / (2W) + 4 x 2 hop latencies.
  const double expected =
      ring_pass_s(kV, 4) + ring_pass_s(kV / 4, 4) + ring_pass_s(kV / 4, 4) + ring_pass_s(kV, 4);
  EXPECT_NEAR(expected, 3.0 / 4 * 2.5 * kV / (2 * kLinkBandwidth) + 8 * kHopLatency, 1e-15);
  const auto program = program_from_hlo(chain_program());
  for (int64_t in_flight : {1, 5})
    for (Fidelity f : {Fidelity::kFast, Fidelity::kFull}) {
      const Timeline t = run(program, torus_4x4(in_flight), f);
      EXPECT_NEAR(t.step_time_s, expected, 1e-11) << fidelity_name(f) << " in flight " << in_flight;
      EXPECT_NEAR(t.exposed_communication_s, expected, 1e-11)
          << fidelity_name(f) << " in flight " << in_flight;
    }
}

TEST(Engine, ChainStartsEachCollectiveWhenItsInputIsDone) {
  // The trace: every collective starts when the one it reads ends.
  const auto program = program_from_hlo(chain_program());
  for (Fidelity f : {Fidelity::kFast, Fidelity::kFull}) {
    const Timeline t = run(program, torus_4x4(5), f, true);
    std::vector<const TraceEvent*> collectives;
    for (const TraceEvent& e : t.events)
      if (e.device == 0 && e.track.starts_with("collectives ")) collectives.push_back(&e);
    ASSERT_EQ(collectives.size(), 4u) << fidelity_name(f);
    std::sort(collectives.begin(), collectives.end(),
              [](const TraceEvent* a, const TraceEvent* b) { return a->start_s < b->start_s; });
    const std::vector<std::string> order = {"rs1", "rs2", "ag1", "ag2"};
    for (size_t i = 0; i < order.size(); ++i) {
      EXPECT_EQ(collectives[i]->name, order[i]) << fidelity_name(f);
      if (i > 0) {
        EXPECT_NEAR(collectives[i]->start_s,
                    collectives[i - 1]->start_s + collectives[i - 1]->duration_s, 1e-12)
            << fidelity_name(f) << " " << order[i];
      }
    }
  }
}

// A reduce-scatter over x of p and an all-gather over y of q: independent,
// on disjoint links.
std::string independent_program() {
  return fmt::format(R"(HloModule independent, num_partitions=16
{0}
ENTRY %main (p: bf16[2048,2048], q: bf16[128,2048]) -> (bf16[512,2048], bf16[512,2048]) {{
  %p = bf16[2048,2048]{{1,0}} parameter(0)
  %q = bf16[128,2048]{{1,0}} parameter(1)
  %rs = bf16[512,2048]{{1,0}} reduce-scatter(%p), channel_id=1, {1}, dimensions={{0}}, use_global_device_ids=true, to_apply=%sum
  %ag = bf16[512,2048]{{1,0}} all-gather(%q), channel_id=2, {2}, dimensions={{0}}, use_global_device_ids=true
  ROOT %t = (bf16[512,2048]{{1,0}}, bf16[512,2048]{{1,0}}) tuple(%rs, %ag)
}})",
                     kSum, kX, kY);
}

TEST(Engine, IndependentCollectivesStillOverlap) {
  // Reduce-scatter of V over x, all-gather to V/4 over y: with two in
  // flight they run side by side (no link in common), the step is the
  // longer; one at a time it is the sum.
  const double rs = ring_pass_s(kV, 4), ag = ring_pass_s(kV / 4, 4);
  const auto program = program_from_hlo(independent_program());
  for (Fidelity f : {Fidelity::kFast, Fidelity::kFull}) {
    EXPECT_NEAR(run(program, torus_4x4(5), f).step_time_s, std::max(rs, ag), 1e-11)
        << fidelity_name(f);
    EXPECT_NEAR(run(program, torus_4x4(1), f).step_time_s, rs + ag, 1e-11) << fidelity_name(f);
  }
}

TEST(Engine, AsyncPairsWaitForTheCollectiveTheyRead) {
  // all-reduce-start/done over x of V, then all-gather-start/done over y of
  // its result to 4V: all-reduce = two ring passes of V, all-gather one of
  // 4V, one after the other.
  const std::string text = fmt::format(R"(HloModule async_chain, num_partitions=16
{0}
ENTRY %main (p: bf16[2048,2048]) -> bf16[8192,2048] {{
  %p = bf16[2048,2048]{{1,0}} parameter(0)
  %ars = bf16[2048,2048]{{1,0}} all-reduce-start(%p), channel_id=1, {1}, use_global_device_ids=true, to_apply=%sum
  %ard = bf16[2048,2048]{{1,0}} all-reduce-done(%ars)
  %ags = (bf16[2048,2048]{{1,0}}, bf16[8192,2048]{{1,0}}) all-gather-start(%ard), channel_id=2, {2}, dimensions={{0}}, use_global_device_ids=true
  ROOT %agd = bf16[8192,2048]{{1,0}} all-gather-done(%ags)
}})",
                                       kSum, kX, kY);
  const double expected = 2 * ring_pass_s(kV, 4) + ring_pass_s(4 * kV, 4);
  const auto program = program_from_hlo(text);
  for (int64_t in_flight : {1, 5})
    for (Fidelity f : {Fidelity::kFast, Fidelity::kFull})
      EXPECT_NEAR(run(program, torus_4x4(in_flight), f).step_time_s, expected, 1e-11)
          << fidelity_name(f) << " in flight " << in_flight;
}

TEST(Engine, CollectivesInAWhileBodyWaitAcrossIterations) {
  // Per iteration a reduce-scatter over x of the loop state, then an
  // all-gather over x of its result back to V (same links, different
  // kinds): the all-gather reads the reduce-scatter and the next
  // iteration's reduce-scatter reads the all-gather (loop state), so three
  // iterations run six ring passes of V back to back. The counter add comes
  // last in the body and runs under the collectives.
  const std::string text = fmt::format(R"(HloModule loop_chain, num_partitions=16
{0}
%cond (s: (s32[], bf16[2048,2048])) -> pred[] {{
  %s = (s32[], bf16[2048,2048]{{1,0}}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}}
%body (b: (s32[], bf16[2048,2048])) -> (s32[], bf16[2048,2048]) {{
  %b = (s32[], bf16[2048,2048]{{1,0}}) parameter(0)
  %h = bf16[2048,2048]{{1,0}} get-tuple-element(%b), index=1
  %rs = bf16[512,2048]{{1,0}} reduce-scatter(%h), channel_id=1, {1}, dimensions={{0}}, use_global_device_ids=true, to_apply=%sum
  %ag = bf16[2048,2048]{{1,0}} all-gather(%rs), channel_id=2, {1}, dimensions={{0}}, use_global_device_ids=true
  %i.1 = s32[] get-tuple-element(%b), index=0
  %one = s32[] constant(1)
  %next = s32[] add(%i.1, %one)
  ROOT %out = (s32[], bf16[2048,2048]{{1,0}}) tuple(%next, %ag)
}}
ENTRY %main (x: bf16[2048,2048]) -> bf16[2048,2048] {{
  %zero = s32[] constant(0)
  %x = bf16[2048,2048]{{1,0}} parameter(0)
  %init = (s32[], bf16[2048,2048]{{1,0}}) tuple(%zero, %x)
  %loop = (s32[], bf16[2048,2048]{{1,0}}) while(%init), condition=%cond, body=%body
  ROOT %res = bf16[2048,2048]{{1,0}} get-tuple-element(%loop), index=1
}})",
                                       kSum, kX);
  const double expected = 6 * ring_pass_s(kV, 4);
  const auto program = program_from_hlo(text);
  for (int64_t in_flight : {1, 5})
    for (Fidelity f : {Fidelity::kFast, Fidelity::kFull}) {
      const Timeline t = run(program, torus_4x4(in_flight), f);
      EXPECT_EQ(t.unknown_trip_counts, 0);
      EXPECT_NEAR(t.step_time_s, expected, 1e-11) << fidelity_name(f) << " in flight " << in_flight;
    }
}

TEST(Engine, ComputeWaitsForEveryCollectiveItReads) {
  // A concatenate of a reduce-scatter over x of V (issued first, the longer)
  // and an all-gather over y to V/4 (issued second, done first): it starts
  // when the reduce-scatter ends, so step = reduce-scatter + concatenate.
  const std::string text = fmt::format(R"(HloModule compute_reads_two, num_partitions=16
{0}
ENTRY %main (p: bf16[2048,2048], q: bf16[128,2048]) -> bf16[1024,2048] {{
  %p = bf16[2048,2048]{{1,0}} parameter(0)
  %q = bf16[128,2048]{{1,0}} parameter(1)
  %rs = bf16[512,2048]{{1,0}} reduce-scatter(%p), channel_id=1, {1}, dimensions={{0}}, use_global_device_ids=true, to_apply=%sum
  %ag = bf16[512,2048]{{1,0}} all-gather(%q), channel_id=2, {2}, dimensions={{0}}, use_global_device_ids=true
  ROOT %c = bf16[1024,2048]{{1,0}} concatenate(%rs, %ag), dimensions={{0}}
}})",
                                       kSum, kX, kY);
  const double rs = ring_pass_s(kV, 4), ag = ring_pass_s(kV / 4, 4);
  ASSERT_GT(rs, ag);
  const auto program = program_from_hlo(text);
  for (Fidelity f : {Fidelity::kFast, Fidelity::kFull}) {
    const Timeline t = run(program, torus_4x4(5), f);
    const auto c =
        std::find_if(t.ops.begin(), t.ops.end(), [](const OpRecord& r) { return r.name == "c"; });
    ASSERT_NE(c, t.ops.end());
    ASSERT_GT(c->seconds, 0);
    EXPECT_NEAR(t.step_time_s, rs + c->seconds, 1e-11) << fidelity_name(f);
    EXPECT_NEAR(t.exposed_communication_s, rs, 1e-11) << fidelity_name(f);
  }
}

// An all-reduce over a ring of 8 and a dot independent of it (compiler::CollectiveExecution).
constexpr const char* kAllReduceBesideDot = R"(HloModule sync, num_partitions=8
%sum (x: bf16[], y: bf16[]) -> bf16[] {
  %x = bf16[] parameter(0)
  %y = bf16[] parameter(1)
  ROOT %add = bf16[] add(%x, %y)
}
ENTRY %main (p: bf16[2048,2048], a: bf16[2048,2048]) -> (bf16[2048,2048], bf16[2048,2048]) {
  %p = bf16[2048,2048]{1,0} parameter(0)
  %a = bf16[2048,2048]{1,0} parameter(1)
  %ar = bf16[2048,2048]{1,0} all-reduce(%p), channel_id=1, replica_groups=[1,8]<=[8], use_global_device_ids=true, to_apply=%sum
  %d = bf16[2048,2048]{1,0} dot(%p, %a), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %t = (bf16[2048,2048]{1,0}, bf16[2048,2048]{1,0}) tuple(%ar, %d)
})";

TEST(Engine, SynchronousCollectiveHoldsTheComputeStream) {
  // Bidirectional ring all-reduce of V over a closed ring of 8: two ring
  // passes (reduce-scatter + all-gather), each 7/8 V / (2W) + 4 hops. The dot
  // is independent of it: asynchronous, the all-reduce hides under the
  // (longer) dot; synchronous, the dot starts when it ends, step = sum.
  const hw::System system = testing::ring_system(8);
  const double ar = 2 * ((8 - 1.0) / 8 * kV / (2 * kLinkBandwidth) + 8 / 2.0 * kHopLatency);
  auto program = program_from_hlo(kAllReduceBesideDot);
  for (Fidelity f : {Fidelity::kFast, Fidelity::kFull}) {
    const Timeline async = run(program, system, f);
    const auto d = std::find_if(async.ops.begin(), async.ops.end(),
                                [](const OpRecord& r) { return r.name == "d"; });
    ASSERT_NE(d, async.ops.end());
    const double dot = d->seconds;
    ASSERT_GT(dot, ar);  // premise: the dot hides the all-reduce
    EXPECT_NEAR(async.step_time_s, dot, 1e-11) << fidelity_name(f);
    EXPECT_EQ(async.exposed_communication_s, 0) << fidelity_name(f);

    // Only all-gathers asynchronous (TPU v4's flags): the all-reduce is synchronous.
    program.collectives.async = {compiler::Opcode::kAllGather};
    const Timeline sync = run(program, system, f);
    EXPECT_NEAR(sync.step_time_s, ar + dot, 2e-11) << fidelity_name(f);
    EXPECT_NEAR(sync.exposed_communication_s, ar, 1e-11) << fidelity_name(f);
    EXPECT_NEAR(sync.compute_s, dot, 1e-11) << fidelity_name(f);
    program.collectives = {};
  }
}

TEST(Engine, WithoutCollectiveFusionTheReductionRunsOnTheComputeStream) {
  // The all-reduce's reduction as a TensorCore kernel: (n-1)/n of its
  // operand's elements added, the received chunk and the partial read, the
  // sum written (step_program.h); its time from the core model directly.
  const hw::System system = testing::ring_system(8);
  const double ar = 2 * ((8 - 1.0) / 8 * kV / (2 * kLinkBandwidth) + 8 / 2.0 * kHopLatency);
  hw::OpQuery query;
  query.vector_work.push_back({2048 * 2048 * 7 / 8, hw::VectorCostClass::kSimple});
  query.hbm_bytes_read = 2 * 7.0 / 8 * kV;
  query.hbm_bytes_written = 7.0 / 8 * kV;
  const double reduction = system.core().time_op(query).seconds;
  ASSERT_GT(reduction, 0);
  auto program = program_from_hlo(kAllReduceBesideDot);
  auto seconds_of = [](const Timeline& t, const std::string& name) {
    const auto it =
        std::find_if(t.ops.begin(), t.ops.end(), [&](const OpRecord& r) { return r.name == name; });
    return it == t.ops.end() ? -1.0 : it->seconds;
  };
  for (Fidelity f : {Fidelity::kFast, Fidelity::kFull}) {
    program.collectives = {};
    const double dot = seconds_of(run(program, system, f), "d");
    program.collectives.fusion = false;
    // Asynchronous: the kernel runs beside the all-reduce's transfer (its HBM
    // shared with the DMAs, so at least its time alone), then the dot; the
    // all-reduce stays hidden.
    const Timeline async = run(program, system, f);
    const double kernel = seconds_of(async, "ar.reduction");
    EXPECT_GE(kernel, reduction - 1e-12) << fidelity_name(f);
    EXPECT_NEAR(async.step_time_s, kernel + dot, 2e-11) << fidelity_name(f);
    // Synchronous: the all-reduce, then its kernel alone, then the dot.
    program.collectives.async = {};
    const Timeline sync = run(program, system, f);
    EXPECT_NEAR(seconds_of(sync, "ar.reduction"), reduction, 1e-12) << fidelity_name(f);
    EXPECT_NEAR(sync.step_time_s, ar + reduction + dot, 3e-11) << fidelity_name(f);
  }
}

// Full fidelity by symmetry class against every device: the engine run on the program's steps
// with every link's busy time summed (EngineInputs::link_totals).
struct FullRun {
  SymmetryClasses classes;
  EngineResult result;
};
FullRun run_full(const compiler::SpmdProgram& program, const hw::System& system, bool by_class) {
  OpCostModel costs(system.core(), &program.module);
  CollectiveCatalog catalog(system, program.num_devices);
  const StepProgram steps = flatten_program(FlattenInputs{program, costs, catalog});
  FullRun out;
  out.classes = find_symmetry_classes(system, catalog, program.num_devices, {});
  EngineInputs in{steps,
                  catalog,
                  system.topology(),
                  Fidelity::kFull,
                  program.num_devices,
                  {},
                  system.config().ici.collectives_in_flight,
                  system.config().ici.collectives_in_flight_per_kind,
                  false,
                  nullptr,
                  system.config().hbm.bandwidth,
                  {},
                  {},
                  true,
                  nullptr,
                  {},
                  {},
                  nullptr};
  if (by_class) in.symmetry = &out.classes;
  out.result = run_engine(in);
  return out;
}

bool same(double a, double b) {
  return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b));
}

// Every device's account per device equals its class representative's, field by field and op
// by op, and every link carried the same busy time: the class run is the per-device run.
// Returns the number of classes.
size_t expect_class_run_equals_per_device(const std::string& hlo, const hw::System& system) {
  const auto program = program_from_hlo(hlo);
  const FullRun by_class = run_full(program, system, true);
  const FullRun per_device = run_full(program, system, false);
  EXPECT_TRUE(by_class.classes.applied) << by_class.classes.note;
  const std::vector<DeviceAccount>& classes = by_class.result.devices;
  EXPECT_EQ(classes.size(), by_class.classes.representatives.size());
  EXPECT_EQ(per_device.result.devices.size(), static_cast<size_t>(program.num_devices));
  for (int64_t d = 0;
       d < program.num_devices && classes.size() == by_class.classes.representatives.size(); ++d) {
    const DeviceAccount& a = per_device.result.devices[static_cast<size_t>(d)];
    const DeviceAccount& c =
        classes[static_cast<size_t>(by_class.classes.class_of_device[static_cast<size_t>(d)])];
    EXPECT_TRUE(same(a.finish_s, c.finish_s)) << d << ": " << a.finish_s << " vs " << c.finish_s;
    EXPECT_TRUE(same(a.compute_s, c.compute_s)) << d;
    EXPECT_TRUE(same(a.exposed_s, c.exposed_s)) << d;
    EXPECT_TRUE(same(a.idle_s, c.idle_s)) << d;
    EXPECT_TRUE(same(a.hbm_contention_s, c.hbm_contention_s)) << d;
    for (size_t op = 0; op < a.op_busy_s.size(); ++op)
      EXPECT_TRUE(same(a.op_busy_s[op], c.op_busy_s[op])) << d << " op " << op;
  }
  const auto& links = per_device.result.link_busy_s;
  EXPECT_EQ(by_class.result.link_busy_s.size(), links.size());
  double busy = 0;
  for (size_t l = 0; l < links.size() && l < by_class.result.link_busy_s.size(); ++l) {
    EXPECT_TRUE(same(links[l], by_class.result.link_busy_s[l]))
        << "link " << l << ": " << links[l] << " vs " << by_class.result.link_busy_s[l];
    busy += links[l];
  }
  EXPECT_GT(busy, 0);  // the comparison saw traffic
  // Fewer engine events: one device per class instead of every device.
  EXPECT_LT(by_class.result.kernel_events, per_device.result.kernel_events);
  return classes.size();
}

// A 2-D sharded step: a dot whose result is all-reduced over x (rows) while a second dot runs,
// then all-gathered over y (columns), and an all-to-all over x: transfers, compute and HBM
// contention all in play.
std::string two_d_program() {
  return fmt::format(R"(HloModule two_d, num_partitions=16
{0}
ENTRY %main (a: bf16[1024,1024], w: bf16[1024,1024]) -> (bf16[4096,1024], bf16[1024,1024], bf16[1024,1024]) {{
  %a = bf16[1024,1024]{{1,0}} parameter(0)
  %w = bf16[1024,1024]{{1,0}} parameter(1)
  %d = bf16[1024,1024]{{1,0}} dot(%a, %w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  %ars = bf16[1024,1024]{{1,0}} all-reduce-start(%d), channel_id=1, {1}, use_global_device_ids=true, to_apply=%sum
  %e = bf16[1024,1024]{{1,0}} dot(%a, %a), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  %ard = bf16[1024,1024]{{1,0}} all-reduce-done(%ars)
  %ag = bf16[4096,1024]{{1,0}} all-gather(%ard), channel_id=2, {2}, dimensions={{0}}, use_global_device_ids=true
  %x = bf16[1024,1024]{{1,0}} all-to-all(%e), channel_id=3, {1}, dimensions={{0}}
  ROOT %t = (bf16[4096,1024]{{1,0}}, bf16[1024,1024]{{1,0}}, bf16[1024,1024]{{1,0}}) tuple(%ag, %x, %d)
}})",
                     kSum, kX, kY);
}

TEST(Engine, SymmetryClassRunEqualsPerDeviceRunOnATorus) {
  // 4x4 torus, one device per chip: one class (symmetry_test.cc).
  for (int64_t in_flight : {1, 5}) {
    EXPECT_EQ(expect_class_run_equals_per_device(chain_program(), torus_4x4(in_flight)), 1u);
    EXPECT_EQ(expect_class_run_equals_per_device(two_d_program(), torus_4x4(in_flight)), 1u);
  }
}

TEST(Engine, SymmetryClassRunEqualsPerDeviceRunWithTwoDevicesPerChip) {
  // 2x4 chips x 2 devices: 4 classes (the two cores of a chip, times the x groups' period of 2
  // chips along dim 1; symmetry_test.cc), and each x group ([4,4]<=[16]) holds all 4, so its run
  // waits for 4 representatives.
  const hw::System system = make_system({16},
                                        {{"ici.pod_dims", "[2, 4]"},
                                         {"ici.pod_wraparound", "[true, true]"},
                                         {"chip.devices_per_chip", "2"},
                                         {"ici.collectives_in_flight", "5"}},
                                        {2, 4, 2});
  EXPECT_EQ(expect_class_run_equals_per_device(two_d_program(), system), 4u);
}

TEST(Engine, SymmetryClassRunEqualsPerDeviceRunAtAPeriodOfTwo) {
  // A ring of 8 chips with all-reduces over pairs half a ring apart ({0,4}, {1,5}, ...): the
  // half-ring tie rule sends from even coordinates the positive way and from odd ones the
  // negative way, so a unit step does not map the plans onto each other and a step of 2 does:
  // two classes (even and odd chips).
  const std::string hlo = fmt::format(R"(HloModule pairs, num_partitions=8
{0}
ENTRY %main (p: bf16[1024,1024]) -> bf16[1024,1024] {{
  %p = bf16[1024,1024]{{1,0}} parameter(0)
  ROOT %ar = bf16[1024,1024]{{1,0}} all-reduce(%p), channel_id=1, replica_groups={{{{0,4}},{{1,5}},{{2,6}},{{3,7}}}}, use_global_device_ids=true, to_apply=%sum
}})",
                                      kSum);
  EXPECT_EQ(expect_class_run_equals_per_device(hlo, testing::ring_system(8)), 2u);
}

TEST(Engine, SymmetryClassRunEqualsPerDeviceRunForACyclicPermute) {
  // Every device sends its buffer to the next of its row and the one below it (two permutes at
  // once): one class, each permute one group whose job carries all 16 transfers.
  std::string rows, cols;
  for (int d = 0; d < 16; ++d) {
    rows += fmt::format("{}{{{},{}}}", d ? "," : "", d, d / 4 * 4 + (d + 1) % 4);
    cols += fmt::format("{}{{{},{}}}", d ? "," : "", d, (d + 4) % 16);
  }
  const std::string hlo = fmt::format(R"(HloModule cp, num_partitions=16
ENTRY %main (p: bf16[1024,1024]) -> (bf16[1024,1024], bf16[1024,1024]) {{
  %p = bf16[1024,1024]{{1,0}} parameter(0)
  %a = bf16[1024,1024]{{1,0}} collective-permute(%p), channel_id=1, source_target_pairs={{{0}}}
  %b = bf16[1024,1024]{{1,0}} collective-permute(%p), channel_id=2, source_target_pairs={{{1}}}
  ROOT %t = (bf16[1024,1024]{{1,0}}, bf16[1024,1024]{{1,0}}) tuple(%a, %b)
}})",
                                      rows, cols);
  EXPECT_EQ(expect_class_run_equals_per_device(hlo, torus_4x4(5)), 1u);
}

TEST(Engine, SymmetryClassesFoundWithoutTheChipVariantsAreRefused) {
  // Classes found with every device on the machine's chip, run with device 5 on a chip variant:
  // the representative would stand for a device that differs, so the engine refuses the run.
  const auto program = program_from_hlo(chain_program());
  const hw::System system = torus_4x4(5);
  OpCostModel costs(system.core(), &program.module);
  CollectiveCatalog catalog(system, program.num_devices);
  const StepProgram steps = flatten_program(FlattenInputs{program, costs, catalog});
  const SymmetryClasses classes = find_symmetry_classes(system, catalog, program.num_devices, {});
  ASSERT_TRUE(classes.applied);
  std::vector<int32_t> variant(16, -1);
  variant[5] = 0;
  VariantCosts slower;
  for (const OpInfo& op : steps.ops) slower.ops.push_back(op.cost);
  for (OpCost& cost : slower.ops) cost.seconds *= 2;
  EngineInputs in{steps,
                  catalog,
                  system.topology(),
                  Fidelity::kFull,
                  program.num_devices,
                  {},
                  1,
                  1,
                  false,
                  nullptr,
                  0,
                  {},
                  {},
                  false,
                  nullptr,
                  variant,
                  {slower},
                  &classes};
  EXPECT_THROW(run_engine(in), std::logic_error);
}

}  // namespace
}  // namespace podsim::sim
