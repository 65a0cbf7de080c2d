// schedule_computation: topological, collectives start early, their users
// run late, everything else keeps its order; fusion groups stay contiguous.
// These test the latency-hiding rules alone (memory_aware = false): in
// graphs this small the memory-aware rules (memory_schedule_test.cc) would
// move most units.
#include <algorithm>

#include <gtest/gtest.h>

#include "compiler/backend/fusion.h"
#include "compiler/backend/schedule.h"
#include "tests/compiler/backend/test_util.h"

namespace podsim::compiler {
namespace {

using pipeline_test::expect_topological_permutation;
using pipeline_test::names_in;
using Names = std::vector<std::string>;

// x -> c1 -> c2 -> c3 is a compute chain; ar = all-reduce(w) depends only
// on a parameter; u = add(ar, c3) is the collective's user; v is more
// compute; z = add(u, v) the root.
constexpr const char* kOverlapGraph = R"(HloModule m
%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %e (x: f32[8], w: f32[8]) -> f32[8] {
  %x = f32[8] parameter(0)
  %w = f32[8] parameter(1)
  %c1 = f32[8] exponential(%x)
  %c2 = f32[8] negate(%c1)
  %c3 = f32[8] tanh(%c2)
  %ar = f32[8] all-reduce(%w), replica_groups={}, to_apply=%sum
  %u = f32[8] add(%ar, %c3)
  %v = f32[8] multiply(%c3, %c3)
  ROOT %z = f32[8] add(%u, %v)
})";

TEST(Schedule, CollectiveEarlyAndItsUserLate) {
  Module m = parse_hlo(kOverlapGraph);
  const Computation& c = m.entry();
  std::vector<InstrId> order = schedule_computation(
      c, FusionPlan{}, ScheduleOptions{.max_collective_hoist = 0, .memory_aware = false});
  expect_topological_permutation(c, order);
  // ar right after its operand w (it moves 3 places up); u moves past v to
  // just before its user z; the rest keeps the original order.
  EXPECT_EQ(names_in(c, order), (Names{"x", "w", "ar", "c1", "c2", "c3", "v", "u", "z"}));
}

TEST(Schedule, HoistIsLimited) {
  Module m = parse_hlo(kOverlapGraph);
  const Computation& c = m.entry();
  // ar is unit 5; with a limit of 2 it may start at place 3 at the earliest:
  // key (3,0) ties with c2 (3,0) and loses on original position.
  std::vector<InstrId> order = schedule_computation(
      c, FusionPlan{}, ScheduleOptions{.max_collective_hoist = 2, .memory_aware = false});
  expect_topological_permutation(c, order);
  EXPECT_EQ(names_in(c, order), (Names{"x", "w", "c1", "c2", "ar", "c3", "v", "u", "z"}));
}

TEST(Schedule, WithoutCollectivesTheOrderIsKept) {
  Module m = parse_hlo(R"(HloModule m
ENTRY %e (x: f32[8]) -> f32[8] {
  %x = f32[8] parameter(0)
  %b = f32[8] negate(%x)
  %a = f32[8] exponential(%x)
  ROOT %r = f32[8] add(%a, %b)
})");
  std::vector<InstrId> order = schedule_computation(m.entry(), FusionPlan{});
  EXPECT_EQ(names_in(m.entry(), order), (Names{"x", "b", "a", "r"}));
}

TEST(Schedule, FusionGroupsStayContiguous) {
  // plan_fusion: {c1, c2, c3} and {v, z}; u reads the collective, so it
  // stays a kernel of its own (fusing it would make c1..c3 or v wait for
  // ar). The c-chain runs while ar is in flight, u just before {v, z}.
  Module m = parse_hlo(kOverlapGraph);
  const Computation& c = m.entry();
  FusionPlan plan = plan_fusion(c);
  std::vector<InstrId> order = schedule_computation(
      c, plan, ScheduleOptions{.max_collective_hoist = 0, .memory_aware = false});
  expect_topological_permutation(c, order);
  std::vector<int64_t> place(order.size());
  for (size_t p = 0; p < order.size(); ++p)
    place[static_cast<size_t>(order[p])] = static_cast<int64_t>(p);
  for (const FusionGroup& g : plan.groups) {
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (InstrId mbr : g.members) {
      lo = std::min(lo, place[static_cast<size_t>(mbr)]);
      hi = std::max(hi, place[static_cast<size_t>(mbr)]);
    }
    EXPECT_EQ(hi - lo + 1, static_cast<int64_t>(g.members.size()));
  }
  ASSERT_EQ(plan.groups.size(), 2u);
  EXPECT_EQ(plan.group_of[static_cast<size_t>(c.find("u"))], -1);
  EXPECT_EQ(names_in(c, order), (Names{"x", "w", "ar", "c1", "c2", "c3", "u", "v", "z"}));
}

TEST(Schedule, ChainedCollectivesFollowEachOther) {
  // ag2 = all-reduce(ag1): both hoisted, ag2 right after ag1.
  Module m = parse_hlo(R"(HloModule m
%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %e (x: f32[8], w: f32[8]) -> f32[8] {
  %x = f32[8] parameter(0)
  %w = f32[8] parameter(1)
  %c1 = f32[8] exponential(%x)
  %c2 = f32[8] negate(%c1)
  %ag1 = f32[8] all-reduce(%w), replica_groups={}, to_apply=%sum
  %ag2 = f32[8] all-reduce(%ag1), replica_groups={}, to_apply=%sum
  ROOT %z = f32[8] add(%ag2, %c2)
})");
  std::vector<InstrId> order = schedule_computation(
      m.entry(), FusionPlan{}, ScheduleOptions{.max_collective_hoist = 0, .memory_aware = false});
  EXPECT_EQ(names_in(m.entry(), order), (Names{"x", "w", "ag1", "ag2", "c1", "c2", "z"}));
}

TEST(Schedule, WeightConvertMovesUpWithItsAllGather) {
  // A bf16 weight all-gather reads the f32 -> bf16 convert of the shard
  // (cw), which stands just before the layer in emission order. The convert
  // is a collective feeder (a format change of a parameter read only by
  // collectives), so it moves up with the all-gather, which then overlaps
  // the c-chain: x, w, cw, ag, c1, c2, c3, d, z. Without the rule the
  // all-gather could start only after cw, at its original place.
  Module m = parse_hlo(R"(HloModule m
ENTRY %e (x: f32[8], w: f32[2]) -> f32[8] {
  %x = f32[8] parameter(0)
  %w = f32[2] parameter(1)
  %c1 = f32[8] exponential(%x)
  %c2 = f32[8] negate(%c1)
  %c3 = f32[8] tanh(%c2)
  %cw = bf16[2] convert(%w)
  %ag = bf16[8] all-gather(%cw), dimensions={0}, replica_groups=[1,4]<=[4], use_global_device_ids=true, channel_id=1
  %d = f32[8] convert(%ag)
  ROOT %z = f32[8] add(%d, %c3)
})");
  const Computation& c = m.entry();
  std::vector<InstrId> order =
      schedule_computation(c, FusionPlan{}, ScheduleOptions{.memory_aware = false});
  expect_topological_permutation(c, order);
  EXPECT_EQ(names_in(c, order), (Names{"x", "w", "cw", "ag", "c1", "c2", "c3", "d", "z"}));
  // A compute unit feeding a collective is not a format change: it stays.
  Module n = parse_hlo(R"(HloModule m
ENTRY %e (x: f32[8], w: f32[2]) -> f32[8] {
  %x = f32[8] parameter(0)
  %w = f32[2] parameter(1)
  %c1 = f32[8] exponential(%x)
  %c2 = f32[8] negate(%c1)
  %cw = f32[2] exponential(%w)
  %ag = f32[8] all-gather(%cw), dimensions={0}, replica_groups=[1,4]<=[4], use_global_device_ids=true, channel_id=1
  ROOT %z = f32[8] add(%ag, %c2)
})");
  std::vector<InstrId> kept =
      schedule_computation(n.entry(), FusionPlan{}, ScheduleOptions{.memory_aware = false});
  EXPECT_EQ(names_in(n.entry(), kept), (Names{"x", "w", "c1", "c2", "cw", "ag", "z"}));
}

TEST(Schedule, ScannedLayerWeightSliceMovesUpWithItsAllGather) {
  // A scanned layer's weight shard: the stacked weights and the loop index
  // come out of the body's state tuple (here rebuilt after the counter
  // update, as podsim's scan body does; XLA's simplifier would read the
  // elements directly), and the shard is dynamic-slice -> reshape ->
  // convert of them. Those are known when the iteration starts, so the
  // feeder moves up with its all-gather, which then overlaps the c-chain:
  // the order puts ds, r, cw, ag before c1 (without the look-through they
  // stay after c3, where the layer reads them).
  Module m = parse_hlo(R"(HloModule m
ENTRY %e (p: (s32[], f32[8], f32[4,2])) -> f32[8] {
  %p = (s32[], f32[8], f32[4,2]) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %x = f32[8] get-tuple-element(%p), index=1
  %stack = f32[4,2] get-tuple-element(%p), index=2
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  %t = (s32[], f32[8], f32[4,2]) tuple(%next, %x, %stack)
  %ws = f32[4,2] get-tuple-element(%t), index=2
  %zero = s32[] constant(0)
  %c1 = f32[8] exponential(%x)
  %c2 = f32[8] negate(%c1)
  %c3 = f32[8] tanh(%c2)
  %ds = f32[1,2] dynamic-slice(%ws, %i, %zero), dynamic_slice_sizes={1,2}
  %r = f32[2] reshape(%ds)
  %cw = bf16[2] convert(%r)
  %ag = bf16[8] all-gather(%cw), dimensions={0}, replica_groups=[1,4]<=[4], use_global_device_ids=true, channel_id=1
  %d = f32[8] convert(%ag)
  ROOT %z = f32[8] add(%d, %c3)
})");
  const Computation& c = m.entry();
  FusionPlan plan;
  plan.group_of.assign(static_cast<size_t>(c.size()), -1);
  // The slice, reshape and convert as one kernel (XLA fuses them).
  const InstrId ds = c.find("ds"), r = c.find("r"), cw = c.find("cw");
  plan.groups.push_back(FusionGroup{{ds, r, cw}});
  for (InstrId id : {ds, r, cw}) plan.group_of[static_cast<size_t>(id)] = 0;
  std::vector<InstrId> order = schedule_computation(c, plan, ScheduleOptions{.memory_aware = false});
  expect_topological_permutation(c, order);
  const Names names = names_in(c, order);
  auto at = [&](const std::string& name) {
    return std::find(names.begin(), names.end(), name) - names.begin();
  };
  EXPECT_LT(at("ag"), at("c1"));
  EXPECT_LT(at("cw"), at("ag"));
  // The same shard sliced at an index computed in the iteration (next) is
  // not known at the start: its feeder stays, and so does the all-gather.
  Module n = parse_hlo(R"(HloModule m
ENTRY %e (p: (s32[], f32[8], f32[4,2])) -> f32[8] {
  %p = (s32[], f32[8], f32[4,2]) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %x = f32[8] get-tuple-element(%p), index=1
  %ws = f32[4,2] get-tuple-element(%p), index=2
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  %zero = s32[] constant(0)
  %c1 = f32[8] exponential(%x)
  %c2 = f32[8] negate(%c1)
  %c3 = f32[8] tanh(%c2)
  %ds = f32[1,2] dynamic-slice(%ws, %next, %zero), dynamic_slice_sizes={1,2}
  %cw = bf16[1,2] convert(%ds)
  %ag = bf16[4,2] all-gather(%cw), dimensions={0}, replica_groups=[1,4]<=[4], use_global_device_ids=true, channel_id=1
  %rs = bf16[8] reshape(%ag)
  %d = f32[8] convert(%rs)
  ROOT %z = f32[8] add(%d, %c3)
})");
  const Computation& nc = n.entry();
  FusionPlan nplan;
  nplan.group_of.assign(static_cast<size_t>(nc.size()), -1);
  const InstrId nds = nc.find("ds"), ncw = nc.find("cw");
  nplan.groups.push_back(FusionGroup{{nds, ncw}});
  for (InstrId id : {nds, ncw}) nplan.group_of[static_cast<size_t>(id)] = 0;
  const Names kept =
      names_in(nc, schedule_computation(nc, nplan, ScheduleOptions{.memory_aware = false}));
  auto kat = [&](const std::string& name) {
    return std::find(kept.begin(), kept.end(), name) - kept.begin();
  };
  EXPECT_GT(kat("ag"), kat("c3"));
}

// Regression (the MoE workloads crashed with heap corruption): a schedule
// that leaves instructions out has fewer entries than the largest id; the
// member order must still follow the schedule, the root last.
TEST(Schedule, MemberOrderWithASparseSchedule) {
  FusionPlan fusion;
  fusion.groups.push_back(FusionGroup{{3, 9, 7}});  // root 7 (last)
  order_members_by_schedule(fusion, /*schedule=*/{9, 3, 7});
  EXPECT_EQ(fusion.groups[0].members, (std::vector<InstrId>{9, 3, 7}));
}

// Regression (moe_37b_128's entry was scheduled only in part: 14777 of 43767
// instructions): a plan whose groups overlap in a non-cheap op (a dot's
// output chain claiming adds another group already holds) made the op a
// unit of its own, read by and reading a group: a cycle, and Kahn's
// algorithm stopped. The op now belongs to its group_of group only.
TEST(Schedule, OverlappingGroupsStillScheduleEverything) {
  Module m = parse_hlo(R"(HloModule m
ENTRY %e (x: f32[8]) -> f32[8] {
  %x = f32[8] parameter(0)
  %d1 = f32[8] exponential(%x)
  %a1 = f32[8] add(%d1, %x)
  %d2 = f32[8] tanh(%x)
  %a2 = f32[8] add(%a1, %d2)
  ROOT %r = f32[8] negate(%a2)
})");
  const Computation& c = m.entry();
  FusionPlan plan;
  plan.group_of = {-1, 0, 0, 1, 1, -1};
  plan.groups = {FusionGroup{{1, 2, 4}}, FusionGroup{{3, 4}}};  // a2 (4) in both
  for (bool memory_aware : {false, true}) {
    std::vector<InstrId> order =
        schedule_computation(c, plan, ScheduleOptions{.memory_aware = memory_aware});
    expect_topological_permutation(c, order);
    EXPECT_EQ(names_in(c, order), (Names{"x", "d1", "a1", "d2", "a2", "r"}));
  }
}

}  // namespace
}  // namespace podsim::compiler
