// plan_fusion's multi-output fusion (fusion.h): a reduce's kernel takes in
// the loop kernel whose result it reduces and writes both; the memory plan
// gives that extra output a buffer.
#include <gtest/gtest.h>

#include "compiler/backend/fusion.h"
#include "compiler/backend/memory_plan.h"
#include "tests/compiler/backend/fusion_fixtures.h"
#include "tests/compiler/backend/test_util.h"

namespace podsim::compiler {
namespace {

using pipeline_test::id_of;
using pipeline_test::member_names;
using Names = std::vector<std::string>;

TEST(FusionMultiOutput, ReduceTakesInTheLoopKernelItReduces) {
  Module m = parse_hlo(std::string("HloModule m\n") + fusion_fixtures::kReducers +
                       fusion_fixtures::kNormalize);
  const Computation& c = m.entry();
  FusionPlan plan = plan_fusion(c);
  ASSERT_EQ(plan.groups.size(), 2u);
  const int32_t g = plan.group_of[static_cast<size_t>(id_of(c, "z"))];
  ASSERT_GE(g, 0);
  EXPECT_EQ(member_names(c, plan.groups[static_cast<size_t>(g)]),
            (Names{"m", "e", "zero", "z"}));  // root z
  EXPECT_EQ(plan.group_of[static_cast<size_t>(id_of(c, "e"))], g);
  const int32_t gy = plan.group_of[static_cast<size_t>(id_of(c, "y"))];
  EXPECT_EQ(member_names(c, plan.groups[static_cast<size_t>(gy)]), (Names{"bz", "y"}));
}

TEST(FusionMultiOutput, ExtraOutputHasABuffer) {
  // Id order: a0 b1 m2 e3 zero4 z5 bz6 y7. a, b (N = 64*256*4 = 65536 B
  // each) and the output y (N) are live throughout; e is written by z's
  // kernel and read by y's: live [3, 7]; z (R = 256 B) [5, 7]. Peak at y:
  // 4N + R = 262400 B. Were e a fused intermediate, y would read through
  // it to a and b: 3N + R.
  Module m = parse_hlo(std::string("HloModule m\n") + fusion_fixtures::kReducers +
                       fusion_fixtures::kNormalize);
  std::vector<FusionPlan> fusion(static_cast<size_t>(m.computation_count()));
  fusion[static_cast<size_t>(m.entry_id())] = plan_fusion(m.entry());
  std::vector<std::vector<InstrId>> schedule;  // id order
  const MemoryPlan plan = plan_memory(MemoryPlanInput{m, schedule, fusion, {}});
  EXPECT_EQ(plan.peak_bytes, 4 * 65536 + 256);
}

TEST(FusionMultiOutput, NotWhenAnotherReaderComesBeforeTheReduce) {
  // e is also read by w, whose id lies between e and z. A kernel {m, e,
  // zero, z} would take z's place, after w, which reads e: every kernel
  // stays at its root's place in id order (the schedule's topological
  // order of units), so the merge is refused and e stays its own kernel's
  // root.
  Module m = parse_hlo(std::string("HloModule m\n") + fusion_fixtures::kReducers + R"(
ENTRY %e (a: f32[64,256], b: f32[64,256]) -> (f32[64,256], f32[64]) {
  %a = f32[64,256] parameter(0)
  %b = f32[64,256] parameter(1)
  %m = f32[64,256] multiply(%a, %b)
  %e = f32[64,256] exponential(%m)
  %w = f32[64,256] tanh(%e)
  %zero = f32[] constant(0)
  %z = f32[64] reduce(%e, %zero), dimensions={1}, to_apply=%sum
  ROOT %t = (f32[64,256], f32[64]) tuple(%w, %z)
})");
  const Computation& c = m.entry();
  FusionPlan plan = plan_fusion(c);
  const int32_t ge = plan.group_of[static_cast<size_t>(id_of(c, "e"))];
  const int32_t gz = plan.group_of[static_cast<size_t>(id_of(c, "z"))];
  ASSERT_GE(ge, 0);
  ASSERT_GE(gz, 0);
  EXPECT_NE(ge, gz);
  EXPECT_EQ(member_names(c, plan.groups[static_cast<size_t>(ge)]), (Names{"m", "e"}));
  EXPECT_EQ(member_names(c, plan.groups[static_cast<size_t>(gz)]), (Names{"zero", "z"}));
}

TEST(FusionMultiOutput, NotForALoopOfAnotherShape) {
  // r reduces d = e[:, :128] (a slice, fused into r's kernel), not e
  // itself: e's loop ([64,256]) is not the reduce's input loop ([64,128]),
  // so the kernels stay apart.
  Module m = parse_hlo(std::string("HloModule m\n") + fusion_fixtures::kReducers + R"(
ENTRY %e (a: f32[64,256], b: f32[64,256]) -> (f32[64,256], f32[64]) {
  %a = f32[64,256] parameter(0)
  %b = f32[64,256] parameter(1)
  %m = f32[64,256] multiply(%a, %b)
  %e = f32[64,256] exponential(%m)
  %d = f32[64,128] slice(%e), slice={[0:64], [0:128]}
  %zero = f32[] constant(0)
  %r = f32[64] reduce(%d, %zero), dimensions={1}, to_apply=%sum
  %w = f32[64,256] tanh(%e)
  ROOT %t = (f32[64,256], f32[64]) tuple(%w, %r)
})");
  const Computation& c = m.entry();
  FusionPlan plan = plan_fusion(c);
  const int32_t gr = plan.group_of[static_cast<size_t>(id_of(c, "r"))];
  ASSERT_GE(gr, 0);
  EXPECT_EQ(member_names(c, plan.groups[static_cast<size_t>(gr)]), (Names{"d", "zero", "r"}));
  EXPECT_NE(plan.group_of[static_cast<size_t>(id_of(c, "e"))], gr);
}

TEST(FusionMultiOutput, NotForAKernelThatEndsABiggerValuesLife) {
  // eq = compare(l, broadcast(max(l))) is the last reader of the f32
  // logits l (64 KiB) and of mx, and writes a 16 KiB mask: a kernel that
  // frees more than it writes, which the schedule runs early. Merged into
  // cnt's kernel (which reduces select(eq, 1, 0)), it would run at cnt's
  // place and keep l alive that long, so it stays its own kernel {bm, eq}.
  Module m = parse_hlo(std::string("HloModule m\n") + fusion_fixtures::kReducers + R"(
ENTRY %e (x: f32[64,256], g: f32[64,256]) -> (f32[64,256], f32[64]) {
  %x = f32[64,256] parameter(0)
  %g = f32[64,256] parameter(1)
  %l = f32[64,256] exponential(%x)
  %ninf = f32[] constant(-inf)
  %mx = f32[64] reduce(%l, %ninf), dimensions={1}, to_apply=%max
  %bm = f32[64,256] broadcast(%mx), dimensions={0}
  %eq = pred[64,256] compare(%l, %bm), direction=EQ
  %one = f32[] constant(1)
  %bo = f32[64,256] broadcast(%one), dimensions={}
  %zero = f32[] constant(0)
  %bz = f32[64,256] broadcast(%zero), dimensions={}
  %s = f32[64,256] select(%eq, %bo, %bz)
  %cnt = f32[64] reduce(%s, %zero), dimensions={1}, to_apply=%sum
  %t = f32[64,256] select(%eq, %g, %bz)
  ROOT %r = (f32[64,256], f32[64]) tuple(%t, %cnt)
})");
  const Computation& c = m.entry();
  FusionPlan plan = plan_fusion(c);
  const int32_t geq = plan.group_of[static_cast<size_t>(id_of(c, "eq"))];
  const int32_t gcnt = plan.group_of[static_cast<size_t>(id_of(c, "cnt"))];
  ASSERT_GE(geq, 0);
  ASSERT_GE(gcnt, 0);
  EXPECT_NE(geq, gcnt);
  EXPECT_EQ(member_names(c, plan.groups[static_cast<size_t>(geq)]), (Names{"bm", "eq"}));
}

}  // namespace
}  // namespace podsim::compiler
