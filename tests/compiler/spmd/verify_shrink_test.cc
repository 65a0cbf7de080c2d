// Reduced shapes for --verify: the shrink rule, the transform on the forms
// whose sizes the module relates (dot, reshape split/merge, slice, pad,
// concatenate, gather, convolution windows, constants), its refusals, the
// sharding divisibility check, the search reduce_for_verify runs and the
// plan --verify follows.
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "compiler/hlo/hlo_parser.h"
#include "compiler/ir/verifier.h"
#include "compiler/spmd/partitioner.h"
#include "compiler/spmd/verify.h"
#include "compiler/spmd/verify_shrink.h"

namespace podsim::compiler {
namespace {

ShrinkRule rule(int64_t factor, int64_t min_dim = 2, int64_t modulus = 0) {
  ShrinkRule r;
  r.factor = factor;
  r.min_dim = min_dim;
  r.residue_modulus = modulus;
  return r;
}

// The shape of instruction `name` in the entry of the shrunk module.
std::string shape_of(const Module& m, const std::string& name) {
  const InstrId id = m.entry().find(name);
  EXPECT_NE(id, kNoId) << name;
  return id == kNoId ? "" : m.entry().instr(id).shape.to_string(false);
}

Module shrunk(const std::string& text, const ShrinkRule& r) {
  ShrinkOutcome out = shrink_module(parse_hlo(text), r);
  EXPECT_TRUE(out.module.has_value()) << out.why_not;
  if (!out.module) return Module();
  verify_module(*out.module);  // the transform's promise
  return std::move(*out.module);
}

TEST(ShrinkRule, DividesWhatTheFactorDividesDownToTheMinimum) {
  EXPECT_EQ(rule(32).dim(8192), 256);
  EXPECT_EQ(rule(32).dim(24), 24);    // 32 does not divide 24
  EXPECT_EQ(rule(8, 4).dim(16), 16);  // 16 / 8 = 2 < 4
  EXPECT_EQ(rule(8, 4).dim(32), 4);
  ShrinkRule pinned = rule(2);
  pinned.pinned = {64};
  EXPECT_EQ(pinned.dim(64), 64);
  EXPECT_EQ(pinned.dim(128), 64);
}

TEST(ShrinkRule, ApproximateKeepsTheRemainderModuloTheTileCounts) {
  // 39295 / 16 = 2455 (floor); modulo 4 the dim is 3 (39295 = 4 x 9823 + 3),
  // 2455 = 4 x 613 + 3 already: 2455. 1001 / 16 = 62 = 4 x 15 + 2, and
  // 1001 = 1 (mod 4): 60 + 1 = 61.
  EXPECT_EQ(rule(16, 2, 4).dim(39295), 2455);
  EXPECT_EQ(rule(16, 2, 4).dim(1001), 61);
  EXPECT_EQ(rule(16, 2, 4).dim(1001) % 4, 1001 % 4);
  EXPECT_EQ(rule(16, 2, 0).dim(1001), 1001);  // exact rule: kept
  EXPECT_EQ(rule(16, 2, 4).dim(7), 7);        // too small to shrink
}

TEST(Shrink, DotDividesEveryLargeDim) {
  const Module m = shrunk(R"(HloModule m, num_partitions=2
ENTRY e {
  a = f32[8192,4096] parameter(0), sharding={devices=[2,1]0,1}
  b = f32[4096,8192] parameter(1), sharding={devices=[1,2]0,1}
  ROOT d = f32[8192,8192] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})",
                          rule(32));
  EXPECT_EQ(shape_of(m, "a"), "f32[256,128]");
  EXPECT_EQ(shape_of(m, "b"), "f32[128,256]");
  EXPECT_EQ(shape_of(m, "d"), "f32[256,256]");
}

TEST(Shrink, ReshapeSplitAndMergeRederiveTheirGroups) {
  // [8192,8192] -> [67108864]: the merged dim takes both factors (2^26 / 2^10
  // = 65536), not the rule's 67108864 / 32; the split back gives [256,256].
  const Module m = shrunk(R"(HloModule m
ENTRY e {
  a = f32[8192,8192] parameter(0)
  flat = f32[67108864] reshape(a)
  n = f32[67108864] negate(flat)
  ROOT back = f32[8192,8192] reshape(n)
})",
                          rule(32));
  EXPECT_EQ(shape_of(m, "flat"), "f32[65536]");
  EXPECT_EQ(shape_of(m, "back"), "f32[256,256]");
}

TEST(Shrink, SplitIntoSmallAndLargeDimsGivesTheFactorToTheLargeOne) {
  // [4096] -> [2,2048] at k = 16: 4096 -> 256, the group's result dims give
  // up 16: 2048 -> 128 (the rule's own choice), 2 stays.
  const Module m = shrunk(R"(HloModule m
ENTRY e {
  a = f32[4096] parameter(0)
  ROOT r = f32[2,2048] reshape(a)
})",
                          rule(16));
  EXPECT_EQ(shape_of(m, "r"), "f32[2,128]");
}

TEST(Shrink, SliceAndPadOffsetsScaleWithTheirDim) {
  // slice [1024:3072] of 4096 at k = 8: [128:384] of 512. pad low 1024 high
  // 0 of 3072 -> 4096: low 128 of 384 -> 512, so the add still matches.
  const Module m = shrunk(R"(HloModule m
ENTRY e {
  a = f32[4096] parameter(0)
  s = f32[2048] slice(a), slice={[1024:3072]}
  t = f32[3072] slice(a), slice={[0:3072]}
  z = f32[] constant(0)
  p = f32[4096] pad(t, z), padding=1024_0
  ROOT r = f32[4096] add(a, p)
})",
                          rule(8));
  EXPECT_EQ(shape_of(m, "s"), "f32[256]");
  EXPECT_EQ(shape_of(m, "p"), "f32[512]");
  const Instruction& s = m.entry().instr(m.entry().find("s"));
  EXPECT_EQ(s.attrs.slice[0].start, 128);
  EXPECT_EQ(s.attrs.slice[0].limit, 384);
  EXPECT_EQ(m.entry().instr(m.entry().find("p")).attrs.padding[0].low, 128);
}

TEST(Shrink, SmallSliceKeepsItsSizeAndStaysInside) {
  // A 4-element slice at 4090 of 4096 at k = 8 (4 stays: 4 / 8 is no
  // integer): it moves to 4090 x 512 / 4096 = 511, then back inside: 508.
  const Module m = shrunk(R"(HloModule m
ENTRY e {
  a = f32[4096] parameter(0)
  ROOT s = f32[4] slice(a), slice={[4090:4094]}
})",
                          rule(8));
  const Instruction& s = m.entry().instr(m.entry().find("s"));
  EXPECT_EQ(s.shape.to_string(false), "f32[4]");
  EXPECT_EQ(s.attrs.slice[0].start, 508);
  EXPECT_EQ(s.attrs.slice[0].limit, 512);
}

TEST(Shrink, ConcatenateSumsItsShrunkOperands) {
  const Module m = shrunk(R"(HloModule m
ENTRY e {
  a = f32[1024,64] parameter(0)
  b = f32[3072,64] parameter(1)
  c = f32[4096,64] concatenate(a, b), dimensions={0}
  d = f32[4096,64] parameter(2)
  ROOT r = f32[4096,64] add(c, d)
})",
                          rule(16));
  EXPECT_EQ(shape_of(m, "c"), "f32[256,4]");
}

TEST(Shrink, GatherSliceSizesFollowTheOperand) {
  // Rows of a [32768,1024] table: slice sizes {1,1024} -> {1,64} at k = 16.
  const Module m = shrunk(R"(HloModule m
ENTRY e {
  table = f32[32768,1024] parameter(0)
  ids = s32[4096,1] parameter(1)
  ROOT g = f32[4096,1024] gather(table, ids), offset_dims={1}, collapsed_slice_dims={0},
    start_index_map={0}, index_vector_dim=1, slice_sizes={1,1024}
})",
                          rule(16));
  EXPECT_EQ(shape_of(m, "g"), "f32[256,64]");
  EXPECT_EQ(m.entry().instr(m.entry().find("g")).attrs.gather_slice_sizes,
            (std::vector<int64_t>{1, 64}));
}

TEST(Shrink, ConvolutionWindowFollowsTheKernel) {
  // A correlation whose kernel is as large as the input (a weight gradient):
  // window 64x64 -> 32x32 with the kernel at k = 2.
  const Module m = shrunk(R"(HloModule m
ENTRY e {
  x = f32[8,64,64,16] parameter(0)
  y = f32[8,64,64,32] parameter(1)
  ROOT c = f32[3,3,16,32] convolution(x, y), window={size=64x64 pad=1_1x1_1}, dim_labels=f01b_i01o->01bf
})",
                          rule(2));
  EXPECT_EQ(shape_of(m, "c"), "f32[3,3,8,16]");
  EXPECT_EQ(m.entry().instr(m.entry().find("c")).attrs.window[0].size, 32);
}

TEST(Shrink, ConvolutionGroupCountsAndDilationFollowTheirDims) {
  // Depthwise: feature_group_count = the 64 input features -> 32 at k = 2.
  // A dilated kernel (rhs_dilate=4, pad 4_4 on 64): both halve with the
  // input, so the output keeps the input's spatial size (32 + 4 - 2x2 = 32).
  const Module m = shrunk(R"(HloModule m
ENTRY e {
  x = f32[8,64,64] parameter(0)
  k = f32[3,1,64] parameter(1)
  ROOT c = f32[8,64,64] convolution(x, k), window={size=3 pad=4_4 rhs_dilate=4}, dim_labels=b0f_0io->b0f,
    feature_group_count=64
})",
                          rule(2));
  const Instruction& c = m.entry().instr(m.entry().find("c"));
  EXPECT_EQ(c.shape.to_string(false), "f32[4,32,32]");
  EXPECT_EQ(c.attrs.feature_group_count, 32);
  EXPECT_EQ(c.attrs.window[0].window_dilation, 2);
  EXPECT_EQ(c.attrs.window[0].pad_low, 2);
}

TEST(Shrink, SplatConstantsShrinkOtherLargeConstantsRefuse) {
  const Module m = shrunk(R"(HloModule m
ENTRY e {
  a = f32[8] parameter(0)
  c = f32[8] constant({7, 7, 7, 7, 7, 7, 7, 7})
  ROOT r = f32[8] add(a, c)
})",
                          rule(2));
  EXPECT_EQ(shape_of(m, "c"), "f32[4]");
  EXPECT_EQ(m.entry().instr(m.entry().find("c")).attrs.literal->values(),
            (std::vector<double>{7, 7, 7, 7}));
  ShrinkOutcome refused = shrink_module(parse_hlo(R"(HloModule m
ENTRY e {
  a = f32[4] parameter(0)
  c = f32[4] constant({1, 2, 3, 4})
  ROOT r = f32[4] add(a, c)
})"),
                                        rule(2));
  EXPECT_FALSE(refused.module.has_value());
  EXPECT_NE(refused.why_not.find("constant 'c'"), std::string::npos) << refused.why_not;
}

TEST(Shrink, InconsistentSizesAreRefusedByTheVerifier) {
  // 4096 = 4095 + 1: the rule divides 4096 but neither part, so the
  // concatenate no longer matches the add's other operand.
  ShrinkOutcome out = shrink_module(parse_hlo(R"(HloModule m
ENTRY e {
  a = f32[4095] parameter(0)
  b = f32[1] parameter(1)
  c = f32[4096] concatenate(a, b), dimensions={0}
  d = f32[4096] parameter(2)
  ROOT r = f32[4096] add(c, d)
})"),
                                    rule(2));
  EXPECT_FALSE(out.module.has_value());
  EXPECT_NE(out.why_not.find("add"), std::string::npos) << out.why_not;
}

TEST(Shrink, WhileBodiesShrinkWithTheirCaller) {
  const Module m = shrunk(R"(HloModule m
body {
  p = (s32[], f32[1024]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  j = s32[] add(i, one)
  v = f32[1024] get-tuple-element(p), index=1
  w = f32[1024] negate(v)
  ROOT t = (s32[], f32[1024]) tuple(j, w)
}
cond {
  p = (s32[], f32[1024]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY e {
  a = f32[1024] parameter(0)
  z = s32[] constant(0)
  t = (s32[], f32[1024]) tuple(z, a)
  ROOT w = (s32[], f32[1024]) while(t), condition=cond, body=body
})",
                          rule(8));
  EXPECT_EQ(shape_of(m, "w"), "(s32[], f32[128])");
}

TEST(ShrinkShardings, PinsSizesThatWouldChangeTheirPadding) {
  // 24 over 2 tiles is even; 24 / 8 = 3 is not: 24 keeps its size while
  // 4096 shrinks.
  const Module m = parse_hlo(R"(HloModule m, num_partitions=2
ENTRY e {
  a = f32[24,4096] parameter(0), sharding={devices=[2,1]0,1}
  ROOT n = f32[24,4096] negate(a), sharding={devices=[2,1]0,1}
})");
  ShrinkOutcome plain = shrink_module(m, rule(8));
  ASSERT_TRUE(plain.module.has_value());
  const ShardingCheck check = check_shrunk_shardings(m, *plain.module);
  EXPECT_EQ(check.size, 24);
  EXPECT_NE(check.problem.find("24 -> 3"), std::string::npos) << check.problem;
  ShrinkOutcome kept = shrink_keeping_shardings(m, rule(8));
  ASSERT_TRUE(kept.module.has_value()) << kept.why_not;
  EXPECT_EQ(shape_of(*kept.module, "n"), "f32[24,512]");
  EXPECT_TRUE(check_shrunk_shardings(m, *kept.module).problem.empty());
}

TEST(ShrinkShardings, TileCountLcmOfTheModule) {
  const Module m = parse_hlo(R"(HloModule m, num_partitions=12
ENTRY e {
  a = f32[24,4096] parameter(0), sharding={devices=[4,3]<=[12]}
  ROOT n = f32[24,4096] negate(a), sharding={devices=[1,2,6]<=[12] last_tile_dim_replicate}
})");
  EXPECT_EQ(tile_count_lcm(m), 12);
}

// A module over the verify limits at full shapes: 2 x f32[8192,8192]
// operands, 8 bytes an element in the interpreter, are 1 GiB each.
constexpr const char* kLargeDot = R"(HloModule m, num_partitions=2
ENTRY e {
  a = f32[8192,8192] parameter(0), sharding={devices=[2,1]0,1}
  b = f32[8192,8192] parameter(1), sharding={devices=[1,2]0,1}
  ROOT d = f32[8192,8192] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={devices=[2,1]0,1}
})";

TEST(ReduceForVerify, FindsTheLargestReducedShapesThatFitAndVerify) {
  const Module annotated = parse_hlo(kLargeDot);
  const Module program = partition_spmd(annotated, SpmdOptions{});
  EXPECT_FALSE(verify_estimate_fits(estimate_verify(annotated, program), kDefaultVerifyLimitBytes));
  const ReduceAttempt attempt =
      reduce_for_verify(annotated, program, SpmdOptions{}, kDefaultVerifyLimitBytes);
  ASSERT_TRUE(attempt.reduced.has_value()) << attempt.why_not;
  const ReducedVerify& r = *attempt.reduced;
  // Work ~ 2 n^3 MACs (the original and the two devices' halves) at
  // n = 8192 / k: over 2e9 down to n = 1024 (2^31 plus the elements), so k is
  // at least 16; the first factor within both budgets is taken, and the
  // next smaller one is not within them.
  EXPECT_GE(r.factor, 16);
  EXPECT_LE(r.estimate.peak_bytes, kReducedVerifyMemoryShare * kDefaultVerifyLimitBytes);
  EXPECT_LE(r.estimate.element_ops, kReducedVerifyElementOps);
  if (r.factor > 2) {
    const Module bigger = *shrink_module(annotated, rule(r.factor / 2)).module;
    const VerifyEstimate e = estimate_verify(bigger, partition_spmd(bigger, SpmdOptions{}));
    EXPECT_TRUE(e.peak_bytes > kReducedVerifyMemoryShare * kDefaultVerifyLimitBytes ||
                e.element_ops > kReducedVerifyElementOps);
  }
  EXPECT_EQ(r.example, fmt::format("f32[8192,8192] -> f32[{0},{0}]", 8192 / r.factor));
  EXPECT_TRUE(r.structure_difference.empty()) << r.structure_difference;
  const VerifyResult v = verify_partitioning(r.annotated, r.partitioned);
  EXPECT_TRUE(v.ok) << v.first_mismatch;
}

TEST(PlanVerify, FullShapesWhenTheyFitReducedOnesWhenNotUnlessFullOnly) {
  const Module small = parse_hlo(R"(HloModule m, num_partitions=2
ENTRY e {
  a = f32[64,64] parameter(0), sharding={devices=[2,1]0,1}
  ROOT n = f32[64,64] negate(a), sharding={devices=[2,1]0,1}
})");
  const VerifyPlan at_full = plan_verify(small, partition_spmd(small, SpmdOptions{}), SpmdOptions{},
                                         kDefaultVerifyLimitBytes, false);
  EXPECT_FALSE(at_full.reduced.has_value());
  EXPECT_EQ(at_full.reduced_text(), "");

  const Module large = parse_hlo(kLargeDot);
  const Module program = partition_spmd(large, SpmdOptions{});
  const VerifyPlan reduced =
      plan_verify(large, program, SpmdOptions{}, kDefaultVerifyLimitBytes, false);
  ASSERT_TRUE(reduced.reduced.has_value());
  EXPECT_EQ(reduced.estimate.element_ops, reduced.reduced->estimate.element_ops);
  EXPECT_GT(reduced.full.peak_bytes, kDefaultVerifyLimitBytes);
  const std::string text = reduced.reduced_text();
  EXPECT_EQ(text.rfind(fmt::format(" at reduced shapes (dims /{}: f32[8192,8192] -> ",
                                   reduced.reduced->factor),
                       0),
            0u)
      << text;
  EXPECT_NE(text.find("full shapes need about"), std::string::npos) << text;
  EXPECT_THROW(plan_verify(large, program, SpmdOptions{}, kDefaultVerifyLimitBytes, true),
               UserError);
}

TEST(ReduceForVerify, SaysWhyWhenNothingFits) {
  // Only 3s and 5s: no power-of-two factor divides a dim, and without tile
  // counts the approximate rule has nothing to keep (modulus 1 shrinks it,
  // but the memory share is a tiny 1 KiB here).
  const Module annotated = parse_hlo(R"(HloModule m, num_partitions=1
ENTRY e {
  a = f32[3,5] parameter(0)
  ROOT n = f32[3,5] negate(a)
})");
  const Module program = partition_spmd(annotated, SpmdOptions{});
  const ReduceAttempt attempt = reduce_for_verify(annotated, program, SpmdOptions{}, 16);
  EXPECT_FALSE(attempt.reduced.has_value());
  EXPECT_NE(attempt.why_not.find("still needs"), std::string::npos) << attempt.why_not;
}

}  // namespace
}  // namespace podsim::compiler
