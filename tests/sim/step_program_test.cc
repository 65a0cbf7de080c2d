// flatten_program: the collectives each step reads (Step::wait_begin/end),
// through free ops, async pairs, tuples, loop state and calls; not through
// compute ops.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/ir/trip_count.h"
#include "sim/collective_catalog.h"
#include "sim/op_cost.h"
#include "sim/step_program.h"
#include "tests/sim/sim_test_util.h"

namespace podsim::sim {
namespace {

using testing::program_from_hlo;
using testing::ring_system;

struct Flat {
  StepProgram program;
  // Per step: its op's name and the collectives it reads.
  std::vector<std::string> names;
  std::vector<std::vector<int32_t>> reads;
  std::vector<bool> collective;
};

Flat flatten(const std::string& text, compiler::LoopOptimizations loops = {false, false}) {
  compiler::SpmdProgram spmd = program_from_hlo(text);
  spmd.loops = loops;
  const hw::System system = ring_system(4);
  OpCostModel costs(system.core(), &spmd.module);
  CollectiveCatalog catalog(system, spmd.num_devices);
  Flat flat{flatten_program(FlattenInputs{spmd, costs, catalog}), {}, {}, {}};
  for (const Step& step : flat.program.steps) {
    flat.names.push_back(flat.program.ops[static_cast<size_t>(step.op)].name);
    flat.reads.emplace_back(flat.program.waits.begin() + step.wait_begin,
                            flat.program.waits.begin() + step.wait_end);
    flat.collective.push_back(step.collective);
  }
  return flat;
}

using Reads = std::vector<std::vector<int32_t>>;

constexpr const char* kHeader = R"(HloModule m, num_partitions=4
%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %add = f32[] add(%x, %y)
}
)";

TEST(StepProgram, CollectiveReadsTheCollectivesBeforeItThroughFreeOps) {
  const Flat flat = flatten(std::string(kHeader) + R"(
ENTRY %main (p: f32[16,8]) -> f32[16,8] {
  %p = f32[16,8] parameter(0)
  %rs = f32[4,8] reduce-scatter(%p), channel_id=1, replica_groups=[1,4]<=[4], dimensions={0}, use_global_device_ids=true, to_apply=%sum
  %b = f32[4,8] bitcast(%rs)
  %t = (f32[4,8], f32[16,8]) tuple(%b, %p)
  %g = f32[4,8] get-tuple-element(%t), index=0
  %r = f32[32] reshape(%g)
  %ar = f32[32] all-reduce(%r), channel_id=2, replica_groups=[1,4]<=[4], use_global_device_ids=true, to_apply=%sum
  %r2 = f32[4,8] reshape(%ar)
  %ag = f32[16,8] all-gather(%r2), channel_id=3, replica_groups=[1,4]<=[4], dimensions={0}, use_global_device_ids=true
  ROOT %n = f32[16,8] negate(%ag)
})");
  EXPECT_EQ(flat.names, (std::vector<std::string>{"rs", "ar", "ag", "n"}));
  EXPECT_EQ(flat.collective, (std::vector<bool>{true, true, true, false}));
  // Each reads only the one before it: a collective is done after those it
  // reads, so a wait for it covers them.
  EXPECT_EQ(flat.reads, (Reads{{}, {0}, {1}, {2}}));
}

TEST(StepProgram, CollectivesOfKindsNotAsynchronousAreSynchronous) {
  // compiler::CollectiveExecution: only all-gathers asynchronous; the async
  // start of a reduce-scatter counts as a reduce-scatter.
  compiler::SpmdProgram spmd = program_from_hlo(std::string(kHeader) + R"(
ENTRY %main (p: f32[16,8]) -> f32[16,8] {
  %p = f32[16,8] parameter(0)
  %rss = ((f32[16,8]), f32[4,8]) reduce-scatter-start(%p), channel_id=1, replica_groups=[1,4]<=[4], dimensions={0}, use_global_device_ids=true, to_apply=%sum
  %rsd = f32[4,8] reduce-scatter-done(%rss)
  %ag = f32[16,8] all-gather(%rsd), channel_id=2, replica_groups=[1,4]<=[4], dimensions={0}, use_global_device_ids=true
  ROOT %n = f32[16,8] negate(%ag)
})");
  const hw::System system = ring_system(4);
  OpCostModel costs(system.core(), &spmd.module);
  CollectiveCatalog catalog(system, spmd.num_devices);
  auto synchronous = [&] {
    const StepProgram flat = flatten_program(FlattenInputs{spmd, costs, catalog});
    std::vector<bool> out;
    for (const Step& step : flat.steps)
      out.push_back(flat.ops[static_cast<size_t>(step.op)].synchronous);
    return out;
  };
  EXPECT_EQ(synchronous(), (std::vector<bool>{false, false, false}));  // default: all async
  spmd.collectives.async = {compiler::Opcode::kAllGather};
  EXPECT_EQ(synchronous(), (std::vector<bool>{true, false, false}));
  spmd.collectives.async = {};
  EXPECT_EQ(synchronous(), (std::vector<bool>{true, true, false}));
}

TEST(StepProgram, WithoutCollectiveFusionReductionsGetAKernelStep) {
  // collective fusion off: a reduce-scatter (and an all-reduce) is followed by
  // its reduction kernel, reading what the collective reads; an all-gather is not.
  compiler::SpmdProgram spmd = program_from_hlo(std::string(kHeader) + R"(
ENTRY %main (p: f32[16,8]) -> f32[16,8] {
  %p = f32[16,8] parameter(0)
  %ar = f32[16,8] all-reduce(%p), channel_id=1, replica_groups=[1,4]<=[4], use_global_device_ids=true, to_apply=%sum
  %rs = f32[4,8] reduce-scatter(%ar), channel_id=2, replica_groups=[1,4]<=[4], dimensions={0}, use_global_device_ids=true, to_apply=%sum
  %ag = f32[16,8] all-gather(%rs), channel_id=3, replica_groups=[1,4]<=[4], dimensions={0}, use_global_device_ids=true
  ROOT %n = f32[16,8] negate(%ag)
})");
  spmd.collectives.fusion = false;
  const hw::System system = ring_system(4);
  OpCostModel costs(system.core(), &spmd.module);
  CollectiveCatalog catalog(system, spmd.num_devices);
  const StepProgram flat = flatten_program(FlattenInputs{spmd, costs, catalog});
  std::vector<std::string> names;
  Reads reads;
  for (const Step& step : flat.steps) {
    names.push_back(flat.ops[static_cast<size_t>(step.op)].name);
    reads.emplace_back(flat.waits.begin() + step.wait_begin, flat.waits.begin() + step.wait_end);
  }
  EXPECT_EQ(names,
            (std::vector<std::string>{"ar", "ar.reduction", "rs", "rs.reduction", "ag", "n"}));
  EXPECT_EQ(reads, (Reads{{}, {}, {0}, {0}, {1}, {2}}));
  // Each kernel reduces 3/4 of its operand's 128 f32 elements: reads 2 x 96 x 4 B, writes 96 x 4 B.
  const OpInfo& kernel = flat.ops[static_cast<size_t>(flat.steps[1].op)];
  EXPECT_EQ(kernel.cost.hbm_bytes, 3 * 96 * 4.0);
  EXPECT_EQ(kernel.cost.flops, 96.0);
}

TEST(StepProgram, ReadsThroughComputeAreNotListed) {
  const Flat flat = flatten(std::string(kHeader) + R"(
ENTRY %main (p: f32[16,8]) -> f32[16,8] {
  %p = f32[16,8] parameter(0)
  %a = f32[16,8] all-reduce(%p), channel_id=1, replica_groups=[1,4]<=[4], use_global_device_ids=true, to_apply=%sum
  %n = f32[16,8] negate(%a)
  ROOT %b = f32[16,8] all-reduce(%n), channel_id=2, replica_groups=[1,4]<=[4], use_global_device_ids=true, to_apply=%sum
})");
  EXPECT_EQ(flat.names, (std::vector<std::string>{"a", "n", "b"}));
  EXPECT_EQ(flat.reads, (Reads{{}, {0}, {}}));
}

TEST(StepProgram, ComputeReadsEveryCollectiveOfItsOperands) {
  const Flat flat = flatten(std::string(kHeader) + R"(
ENTRY %main (p: f32[16,8], q: f32[4,8]) -> f32[20,8] {
  %p = f32[16,8] parameter(0)
  %q = f32[4,8] parameter(1)
  %rs = f32[4,8] reduce-scatter(%p), channel_id=1, replica_groups=[1,4]<=[4], dimensions={0}, use_global_device_ids=true, to_apply=%sum
  %ag = f32[16,8] all-gather(%q), channel_id=2, replica_groups=[1,4]<=[4], dimensions={0}, use_global_device_ids=true
  ROOT %c = f32[20,8] concatenate(%rs, %ag), dimensions={0}
})");
  EXPECT_EQ(flat.names, (std::vector<std::string>{"rs", "ag", "c"}));
  EXPECT_EQ(flat.reads, (Reads{{}, {}, {0, 1}}));
}

TEST(StepProgram, AsyncStartReadsThroughTheDoneOfAnother) {
  const Flat flat = flatten(std::string(kHeader) + R"(
ENTRY %main (p: f32[4,8]) -> f32[16,8] {
  %p = f32[4,8] parameter(0)
  %ars = f32[4,8] all-reduce-start(%p), channel_id=1, replica_groups=[1,4]<=[4], use_global_device_ids=true, to_apply=%sum
  %ard = f32[4,8] all-reduce-done(%ars)
  %ags = (f32[4,8], f32[16,8]) all-gather-start(%ard), channel_id=2, replica_groups=[1,4]<=[4], dimensions={0}, use_global_device_ids=true
  %agd = f32[16,8] all-gather-done(%ags)
  ROOT %n = f32[16,8] negate(%agd)
})");
  EXPECT_EQ(flat.names, (std::vector<std::string>{"ars", "ags", "n"}));
  EXPECT_EQ(flat.reads, (Reads{{}, {0}, {1}}));
}

TEST(StepProgram, ShortAsyncFormReadsThroughItsDone) {
  // reduce-scatter-start/done, then all-to-all-start/done of its result.
  const Flat flat = flatten(std::string(kHeader) + R"(
ENTRY %main (p: f32[16,8]) -> f32[4,8] {
  %p = f32[16,8] parameter(0)
  %rss = ((f32[16,8]), f32[4,8]) reduce-scatter-start(%p), channel_id=1, replica_groups=[1,4]<=[4], dimensions={0}, use_global_device_ids=true, to_apply=%sum
  %rsd = f32[4,8] reduce-scatter-done(%rss)
  %a2as = ((f32[4,8]), f32[4,8]) all-to-all-start(%rsd), channel_id=2, replica_groups=[1,4]<=[4], dimensions={0}
  %a2ad = f32[4,8] all-to-all-done(%a2as)
  ROOT %n = f32[4,8] negate(%a2ad)
})");
  EXPECT_EQ(flat.names, (std::vector<std::string>{"rss", "a2as", "n"}));
  EXPECT_EQ(flat.collective, (std::vector<bool>{true, true, false}));
  EXPECT_EQ(flat.reads, (Reads{{}, {0}, {1}}));
}

TEST(StepProgram, LoopStateCarriesReadsPerElementAcrossIterations) {
  // Element 1 of the loop state is the previous iteration's all-gather,
  // element 2 an untouched parameter: the reduce-scatter of iteration k
  // reads the all-gather of iteration k-1 (ordinal 2k-1), the all-gather
  // the reduce-scatter before it.
  const Flat flat = flatten(std::string(kHeader) + R"(
%cond (s: (s32[], f32[16,8], f32[16,8])) -> pred[] {
  %s = (s32[], f32[16,8], f32[16,8]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%body (b: (s32[], f32[16,8], f32[16,8])) -> (s32[], f32[16,8], f32[16,8]) {
  %b = (s32[], f32[16,8], f32[16,8]) parameter(0)
  %h = f32[16,8] get-tuple-element(%b), index=1
  %w = f32[16,8] get-tuple-element(%b), index=2
  %rs = f32[4,8] reduce-scatter(%h), channel_id=1, replica_groups=[1,4]<=[4], dimensions={0}, use_global_device_ids=true, to_apply=%sum
  %ag = f32[16,8] all-gather(%rs), channel_id=2, replica_groups=[1,4]<=[4], dimensions={0}, use_global_device_ids=true
  %m = f32[16,8] multiply(%w, %w)
  %i.1 = s32[] get-tuple-element(%b), index=0
  %one = s32[] constant(1)
  %next = s32[] add(%i.1, %one)
  ROOT %out = (s32[], f32[16,8], f32[16,8]) tuple(%next, %ag, %w)
}
ENTRY %main (x: f32[16,8], y: f32[16,8]) -> f32[16,8] {
  %zero = s32[] constant(0)
  %x = f32[16,8] parameter(0)
  %y = f32[16,8] parameter(1)
  %init = (s32[], f32[16,8], f32[16,8]) tuple(%zero, %x, %y)
  %loop = (s32[], f32[16,8], f32[16,8]) while(%init), condition=%cond, body=%body
  %res = f32[16,8] get-tuple-element(%loop), index=1
  ROOT %e = f32[16,8] exponential(%res)
})");
  ASSERT_EQ(flat.program.unknown_trip_counts, 0);
  EXPECT_EQ(flat.names, (std::vector<std::string>{"rs", "ag", "m", "next", "rs", "ag", "m", "next",
                                                  "rs", "ag", "m", "next", "e"}));
  EXPECT_EQ(flat.reads, (Reads{{}, {0}, {}, {}, {1}, {2}, {}, {}, {3}, {4}, {}, {}, {5}}));
}

TEST(StepProgram, CallArgumentsAndResultsPassReadsOn) {
  const Flat flat = flatten(std::string(kHeader) + R"(
%f (a: f32[16,8]) -> f32[16,8] {
  %a = f32[16,8] parameter(0)
  ROOT %ar2 = f32[16,8] all-reduce(%a), channel_id=2, replica_groups=[1,4]<=[4], use_global_device_ids=true, to_apply=%sum
}
ENTRY %main (p: f32[16,8]) -> f32[16,8] {
  %p = f32[16,8] parameter(0)
  %ar = f32[16,8] all-reduce(%p), channel_id=1, replica_groups=[1,4]<=[4], use_global_device_ids=true, to_apply=%sum
  %c = f32[16,8] call(%ar), to_apply=%f
  ROOT %n = f32[16,8] negate(%c)
})");
  EXPECT_EQ(flat.names, (std::vector<std::string>{"ar", "ar2", "n"}));
  EXPECT_EQ(flat.reads, (Reads{{}, {0}, {1}}));
}

// A scan body: x' = x * all-gather(ws[i]) over 3 iterations, ws loop-invariant.
constexpr const char* kGatherLoop = R"(
%cond (s: (s32[], f32[16,8], f32[3,4,8])) -> pred[] {
  %s = (s32[], f32[16,8], f32[3,4,8]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%body (b: (s32[], f32[16,8], f32[3,4,8])) -> (s32[], f32[16,8], f32[3,4,8]) {
  %b = (s32[], f32[16,8], f32[3,4,8]) parameter(0)
  %i = s32[] get-tuple-element(%b), index=0
  %h = f32[16,8] get-tuple-element(%b), index=1
  %ws = f32[3,4,8] get-tuple-element(%b), index=2
  %z = s32[] constant(0)
  %s = f32[1,4,8] dynamic-slice(%ws, %i, %z, %z), dynamic_slice_sizes={1,4,8}
  %w = f32[4,8] reshape(%s)
  %ag = f32[16,8] all-gather(%w), channel_id=1, replica_groups=[1,4]<=[4], dimensions={0}, use_global_device_ids=true
  %m = f32[16,8] multiply(%h, %ag)
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  ROOT %out = (s32[], f32[16,8], f32[3,4,8]) tuple(%next, %m, %ws)
}
ENTRY %main (x: f32[16,8], y: f32[3,4,8]) -> f32[16,8] {
  %zero = s32[] constant(0)
  %x = f32[16,8] parameter(0)
  %y = f32[3,4,8] parameter(1)
  %init = (s32[], f32[16,8], f32[3,4,8]) tuple(%zero, %x, %y)
  %loop = (s32[], f32[16,8], f32[3,4,8]) while(%init), condition=%cond, body=%body
  %res = f32[16,8] get-tuple-element(%loop), index=1
  ROOT %e = f32[16,8] exponential(%res)
})";

TEST(StepProgram, PipelinedAllGatherRunsOneIterationEarly) {
  // Off: each iteration slices, gathers and multiplies (m_k reads ag_k).
  const Flat plain = flatten(std::string(kHeader) + kGatherLoop);
  EXPECT_EQ(plain.names, (std::vector<std::string>{"s", "ag", "m", "next", "s", "ag", "m", "next",
                                                   "s", "ag", "m", "next", "e"}));
  EXPECT_EQ(plain.reads, (Reads{{}, {}, {0}, {}, {}, {}, {1}, {}, {}, {}, {2}, {}, {}}));
  // On: iteration 0's slice and gather before the loop; iteration k issues
  // k+1's where its own were, so m_k reads the gather issued a whole
  // iteration earlier; the last iteration issues none.
  const Flat piped = flatten(std::string(kHeader) + kGatherLoop, {true, false});
  EXPECT_EQ(piped.names, (std::vector<std::string>{"s", "ag", "s", "ag", "m", "next", "s", "ag",
                                                   "m", "next", "m", "next", "e"}));
  EXPECT_EQ(piped.reads, (Reads{{}, {}, {}, {}, {0}, {}, {}, {}, {1}, {}, {2}, {}, {}}));
  EXPECT_EQ(piped.program.collective_steps.size(), plain.program.collective_steps.size());
}

// A reverse-loop body: the gradient g = h * h is reduce-scattered and
// written into slice i of the stacked gradient acc, which nothing else in
// the loop reads; h' = -h carries on.
constexpr const char* kScatterLoop = R"(
%cond (s: (s32[], f32[16,8], f32[3,4,8])) -> pred[] {
  %s = (s32[], f32[16,8], f32[3,4,8]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%body (b: (s32[], f32[16,8], f32[3,4,8])) -> (s32[], f32[16,8], f32[3,4,8]) {
  %b = (s32[], f32[16,8], f32[3,4,8]) parameter(0)
  %i = s32[] get-tuple-element(%b), index=0
  %h = f32[16,8] get-tuple-element(%b), index=1
  %acc = f32[3,4,8] get-tuple-element(%b), index=2
  %g = f32[16,8] multiply(%h, %h)
  %rs = f32[4,8] reduce-scatter(%g), channel_id=1, replica_groups=[1,4]<=[4], dimensions={0}, use_global_device_ids=true, to_apply=%sum
  %u = f32[1,4,8] reshape(%rs)
  %z = s32[] constant(0)
  %acc.1 = f32[3,4,8] dynamic-update-slice(%acc, %u, %i, %z, %z)
  %n = f32[16,8] negate(%h)
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  ROOT %out = (s32[], f32[16,8], f32[3,4,8]) tuple(%next, %n, %acc.1)
}
ENTRY %main (x: f32[16,8], y: f32[3,4,8]) -> f32[3,4,8] {
  %zero = s32[] constant(0)
  %x = f32[16,8] parameter(0)
  %y = f32[3,4,8] parameter(1)
  %init = (s32[], f32[16,8], f32[3,4,8]) tuple(%zero, %x, %y)
  %loop = (s32[], f32[16,8], f32[3,4,8]) while(%init), condition=%cond, body=%body
  %res = f32[3,4,8] get-tuple-element(%loop), index=2
  ROOT %e = f32[3,4,8] exponential(%res)
})";

TEST(StepProgram, PipelinedReduceScatterConsumerRunsOneIterationLate) {
  const Flat plain = flatten(std::string(kHeader) + kScatterLoop);
  EXPECT_EQ(plain.names,
            (std::vector<std::string>{"g", "rs", "acc.1", "n", "next", "g", "rs", "acc.1", "n",
                                      "next", "g", "rs", "acc.1", "n", "next", "e"}));
  // On: the update of iteration k waits for rs_k after iteration k+1's own
  // steps (the last one after the loop), so the next iteration's compute
  // does not wait for the collective.
  const Flat piped = flatten(std::string(kHeader) + kScatterLoop, {false, true});
  EXPECT_EQ(piped.names,
            (std::vector<std::string>{"g", "rs", "n", "next", "g", "rs", "n", "next", "acc.1", "g",
                                      "rs", "n", "next", "acc.1", "acc.1", "e"}));
  EXPECT_EQ(piped.reads,
            (Reads{{}, {}, {}, {}, {}, {}, {}, {}, {0}, {}, {}, {}, {}, {1}, {2}, {}}));
}

TEST(StepProgram, LoopPipeliningLeavesLoopsWithoutSuchCollectivesAlone) {
  // The carried all-gather of LoopStateCarries... reads loop state that
  // changes: nothing moves, on or off.
  const std::string text = std::string(kHeader) + kScatterLoop;
  const Flat on =
      flatten(std::string(kHeader) + kGatherLoop, {false, true});  // no reduce-scatter there
  EXPECT_EQ(on.names, flatten(std::string(kHeader) + kGatherLoop).names);
  const Flat off = flatten(text, {true, false});  // no all-gather there
  EXPECT_EQ(off.names, flatten(text).names);
}

}  // namespace
}  // namespace podsim::sim
