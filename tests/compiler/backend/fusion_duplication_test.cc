// plan_fusion's duplication of cheap producers that read at most their own
// bytes (fusion.h): which ops are recomputed inside every consumer kernel,
// and which stay one kernel whose result is read.
#include <gtest/gtest.h>

#include <algorithm>

#include "compiler/backend/fusion.h"
#include "tests/compiler/backend/fusion_fixtures.h"
#include "tests/compiler/backend/test_util.h"

namespace podsim::compiler {
namespace {

using pipeline_test::id_of;
using pipeline_test::member_names;
using Names = std::vector<std::string>;
using fusion_fixtures::kReducers;
using fusion_fixtures::kSoftmaxWithSharedDenominator;

TEST(FusionDuplication, SoftmaxDenominatorIsRecomputedInEachReader) {
  Module m = parse_hlo(std::string("HloModule m\n") + kReducers + kSoftmaxWithSharedDenominator);
  const Computation& c = m.entry();
  FusionPlan plan = plan_fusion(c);
  auto group_named = [&](const char* root) {
    const int32_t g = plan.group_of[static_cast<size_t>(id_of(c, root))];
    EXPECT_GE(g, 0) << root;
    return g < 0 ? Names{} : member_names(c, plan.groups[static_cast<size_t>(g)]);
  };
  EXPECT_EQ(group_named("mx"), (Names{"ninf", "mx"}));
  EXPECT_EQ(group_named("ex"), (Names{"bm", "s", "ex", "zero", "z"}));
  EXPECT_EQ(group_named("y"), (Names{"bz", "y"}));
  EXPECT_EQ(group_named("t"), (Names{"bz", "t"}));
  EXPECT_EQ(plan.groups.size(), 4u);
  const std::vector<bool> twice = duplicated_members(plan, c.size());
  EXPECT_TRUE(twice[static_cast<size_t>(id_of(c, "bz"))]);
  EXPECT_EQ(std::count(twice.begin(), twice.end(), true), 1);
}

TEST(FusionDuplication, DynamicSliceOfABroadcastConstantIsRecomputed) {
  // The partitioner's per-device scale: ds = dynamic-slice(broadcast(0.5))
  // reads nothing but a scalar, and both of its readers fuse: it is a
  // member of both groups (with its broadcast and constant), not a kernel
  // writing 32 KiB.
  Module m = parse_hlo(std::string("HloModule m\n") + fusion_fixtures::kScaledBySliceOfBroadcast);
  const Computation& c = m.entry();
  FusionPlan plan = plan_fusion(c);
  ASSERT_EQ(plan.groups.size(), 2u);
  const int32_t ga = plan.group_of[static_cast<size_t>(id_of(c, "ta"))];
  const int32_t gb = plan.group_of[static_cast<size_t>(id_of(c, "tb"))];
  EXPECT_EQ(member_names(c, plan.groups[static_cast<size_t>(ga)]),
            (Names{"c", "big", "z", "ds", "a", "ta"}));
  EXPECT_EQ(member_names(c, plan.groups[static_cast<size_t>(gb)]),
            (Names{"c", "big", "z", "ds", "b", "tb"}));
  EXPECT_EQ(plan.group_of[static_cast<size_t>(id_of(c, "ds"))], ga);  // its first user's group
}

TEST(FusionDuplication, SameSizeCheapOpIsRecomputedInEachReader) {
  // n = negate(p) has two readers in different kernels. Recomputing it
  // makes each read p (32 KiB, n's own bytes) instead of n, and saves n's
  // write: XLA's instruction fusion duplicates it, so n is a member of both
  // kernels {n, a, ta} and {n, tb}, group_of naming the first user's (a's).
  // s = add(p, q) reads 64 KiB, twice its bytes: recomputing it in both of
  // its readers would read more than reading s (32 KiB each), so it is
  // written once, unfused (neither reader holds all of s's users), and
  // read by u and v.
  Module m = parse_hlo(R"(HloModule m
ENTRY %e (p: f32[8,1024], q: f32[8,1024]) -> (f32[8,1024], f32[8,1024], f32[8,1024], f32[8,1024]) {
  %p = f32[8,1024] parameter(0)
  %q = f32[8,1024] parameter(1)
  %n = f32[8,1024] negate(%p)
  %a = f32[8,1024] multiply(%n, %q)
  %ta = f32[8,1024] tanh(%a)
  %tb = f32[8,1024] exponential(%n)
  %s = f32[8,1024] add(%p, %q)
  %u = f32[8,1024] tanh(%s)
  %v = f32[8,1024] exponential(%s)
  ROOT %r = (f32[8,1024], f32[8,1024], f32[8,1024], f32[8,1024]) tuple(%ta, %tb, %u, %v)
})");
  const Computation& c = m.entry();
  FusionPlan plan = plan_fusion(c);
  const std::vector<bool> twice = duplicated_members(plan, c.size());
  EXPECT_TRUE(twice[static_cast<size_t>(id_of(c, "n"))]);
  EXPECT_EQ(std::count(twice.begin(), twice.end(), true), 1);
  const int32_t ga = plan.group_of[static_cast<size_t>(id_of(c, "ta"))];
  const int32_t gb = plan.group_of[static_cast<size_t>(id_of(c, "tb"))];
  ASSERT_GE(ga, 0);
  ASSERT_GE(gb, 0);
  EXPECT_EQ(member_names(c, plan.groups[static_cast<size_t>(ga)]), (Names{"n", "a", "ta"}));
  EXPECT_EQ(member_names(c, plan.groups[static_cast<size_t>(gb)]), (Names{"n", "tb"}));
  EXPECT_EQ(plan.group_of[static_cast<size_t>(id_of(c, "n"))], ga);
  const std::vector<bool> may_duplicate = duplicable_ops(c);
  EXPECT_TRUE(may_duplicate[static_cast<size_t>(id_of(c, "n"))]);
  EXPECT_FALSE(may_duplicate[static_cast<size_t>(id_of(c, "s"))]);
  EXPECT_EQ(plan.group_of[static_cast<size_t>(id_of(c, "s"))], -1);
}

TEST(FusionDuplication, ExpensiveExpandingOpIsNotDuplicated) {
  // lg = log(broadcast(v)) expands v 1024x but is expensive (XLA never
  // duplicates a transcendental): one kernel {bv, lg} writes it and both
  // readers read it.
  Module m = parse_hlo(R"(HloModule m
ENTRY %e (v: f32[8], p: f32[8,1024], q: f32[8,1024]) -> (f32[8,1024], f32[8,1024]) {
  %v = f32[8] parameter(0)
  %p = f32[8,1024] parameter(1)
  %q = f32[8,1024] parameter(2)
  %bv = f32[8,1024] broadcast(%v), dimensions={0}
  %lg = f32[8,1024] log(%bv)
  %a = f32[8,1024] multiply(%p, %lg)
  %b = f32[8,1024] multiply(%q, %lg)
  ROOT %r = (f32[8,1024], f32[8,1024]) tuple(%a, %b)
})");
  const Computation& c = m.entry();
  FusionPlan plan = plan_fusion(c);
  const int32_t g = plan.group_of[static_cast<size_t>(id_of(c, "lg"))];
  ASSERT_GE(g, 0);
  EXPECT_EQ(member_names(c, plan.groups[static_cast<size_t>(g)]), (Names{"bv", "lg"}));
  EXPECT_EQ(plan.group_of[static_cast<size_t>(id_of(c, "a"))], -1);
  EXPECT_EQ(plan.group_of[static_cast<size_t>(id_of(c, "b"))], -1);
}

TEST(FusionDuplication, ExpandingOpWithAnUnfusedUserBecomesItsOwnKernel) {
  // cv = convert(iota) expands (reads nothing) and its user bc can fuse
  // it, but bc, a broadcast read by the tuple, is itself no kernel: cv
  // cannot be recomputed there, so it is a kernel of its own {io, cv}
  // whose result bc (unfused) and the multiply's group read.
  Module m = parse_hlo(R"(HloModule m
ENTRY %e (p: f32[1024]) -> (f32[4,1024], f32[1024]) {
  %p = f32[1024] parameter(0)
  %io = s32[1024] iota(), iota_dimension=0
  %cv = f32[1024] convert(%io)
  %bc = f32[4,1024] broadcast(%cv), dimensions={1}
  %a = f32[1024] multiply(%p, %cv)
  %ta = f32[1024] tanh(%a)
  ROOT %r = (f32[4,1024], f32[1024]) tuple(%bc, %ta)
})");
  const Computation& c = m.entry();
  FusionPlan plan = plan_fusion(c);
  const int32_t g = plan.group_of[static_cast<size_t>(id_of(c, "cv"))];
  ASSERT_GE(g, 0);
  EXPECT_EQ(member_names(c, plan.groups[static_cast<size_t>(g)]), (Names{"io", "cv"}));
  EXPECT_EQ(plan.group_of[static_cast<size_t>(id_of(c, "bc"))], -1);
  const int32_t ga = plan.group_of[static_cast<size_t>(id_of(c, "ta"))];
  ASSERT_GE(ga, 0);
  EXPECT_NE(ga, g);
  EXPECT_EQ(member_names(c, plan.groups[static_cast<size_t>(ga)]), (Names{"a", "ta"}));
}

}  // namespace
}  // namespace podsim::compiler
