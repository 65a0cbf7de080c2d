// Interpreter: data-movement ops against hand-computed values.
#include <gtest/gtest.h>

#include "tests/compiler/interpreter/interp_test_util.h"

namespace podsim::compiler::testing {
namespace {

using V = std::vector<double>;

TEST(DataMovement, IotaCountsAlongItsDimension) {
  // s32[2,3] iota over dim 1: each row is 0,1,2.
  Literal r = run(R"(HloModule m
ENTRY main {
  ROOT i = s32[2,3] iota(), iota_dimension=1
})");
  EXPECT_EQ(r.values(), (V{0, 1, 2, 0, 1, 2}));
}

TEST(DataMovement, BroadcastMapsOperandDimsToResultDims) {
  // [3] -> [2,3] along dim 1: rows repeat; [3] -> [3,2] along dim 0: each value twice.
  Module m = parse_verified(R"(HloModule m
ENTRY main {
  p = f32[3] parameter(0)
  a = f32[2,3] broadcast(p), dimensions={1}
  b = f32[3,2] broadcast(p), dimensions={0}
  ROOT t = (f32[2,3], f32[3,2]) tuple(a, b)
})");
  Literal r = evaluate(m, {f32({3}, {1, 2, 3})});
  EXPECT_EQ(r.element(0).values(), (V{1, 2, 3, 1, 2, 3}));
  EXPECT_EQ(r.element(1).values(), (V{1, 1, 2, 2, 3, 3}));
}

TEST(DataMovement, ReshapeKeepsRowMajorOrderAndTransposePermutes) {
  // in = [[0,1,2],[3,4,5]]; reshape to [3,2] keeps 0..5; transpose {1,0}
  // gives out[i][j] = in[j][i] = [[0,3],[1,4],[2,5]].
  Module m = parse_verified(R"(HloModule m
ENTRY main {
  p = f32[2,3] parameter(0)
  r = f32[3,2] reshape(p)
  t = f32[3,2] transpose(p), dimensions={1,0}
  ROOT out = (f32[3,2], f32[3,2]) tuple(r, t)
})");
  Literal r = evaluate(m, {iota_literal(DType::kF32, {2, 3})});
  EXPECT_EQ(r.element(0).values(), (V{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(r.element(1).values(), (V{0, 3, 1, 4, 2, 5}));
}

TEST(DataMovement, Transpose3D) {
  // in[a][b][c] = 6a + 3b + c over [2,2,3]; perm {2,0,1}: out[c][a][b] = in[a][b][c].
  // out[0] = [[0,3],[6,9]], out[1] = [[1,4],[7,10]], out[2] = [[2,5],[8,11]].
  Module m = parse_verified(R"(HloModule m
ENTRY main {
  p = f32[2,2,3] parameter(0)
  ROOT t = f32[3,2,2] transpose(p), dimensions={2,0,1}
})");
  Literal r = evaluate(m, {iota_literal(DType::kF32, {2, 2, 3})});
  EXPECT_EQ(r.values(), (V{0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11}));
}

TEST(DataMovement, StridedSlice) {
  // [10] iota, [1:8:3] -> 1, 4, 7 (size ceil(7/3) = 3).
  // [3,4] iota, rows [0:3:2] = {0,2}, cols [1:4:2] = {1,3} -> 1, 3, 9, 11.
  Module m = parse_verified(R"(HloModule m
ENTRY main {
  p = f32[10] parameter(0)
  q = f32[3,4] parameter(1)
  a = f32[3] slice(p), slice={[1:8:3]}
  b = f32[2,2] slice(q), slice={[0:3:2], [1:4:2]}
  ROOT t = (f32[3], f32[2,2]) tuple(a, b)
})");
  Literal r = evaluate(m, {iota_literal(DType::kF32, {10}), iota_literal(DType::kF32, {3, 4})});
  EXPECT_EQ(r.element(0).values(), (V{1, 4, 7}));
  EXPECT_EQ(r.element(1).values(), (V{1, 3, 9, 11}));
}

TEST(DataMovement, PadWithNegativeEdgesAndInterior) {
  // {1,2,3,4} with interior 1 is [1,0,2,0,3,0,4]; low -1 drops the first
  // element and high -1 the last: [0,2,0,3,0] (size -1-1+4+3 = 5).
  Module m = parse_verified(R"(HloModule m
ENTRY main {
  p = f32[4] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[5] pad(p, z), padding=-1_-1_1
})");
  EXPECT_EQ(evaluate(m, {f32({4}, {1, 2, 3, 4})}).values(), (V{0, 2, 0, 3, 0}));
}

TEST(DataMovement, Pad2DLowHighInterior) {
  // [[1,2],[3,4]], pad 9: dim0 low 1; dim1 interior 1, high 1 ->
  // [[9,9,9,9],[1,9,2,9],[3,9,4,9]].
  Module m = parse_verified(R"(HloModule m
ENTRY main {
  p = f32[2,2] parameter(0)
  c = f32[] constant(9)
  ROOT r = f32[3,4] pad(p, c), padding=1_0_0x0_1_1
})");
  EXPECT_EQ(evaluate(m, {f32({2, 2}, {1, 2, 3, 4})}).values(),
            (V{9, 9, 9, 9, 1, 9, 2, 9, 3, 9, 4, 9}));
}

TEST(DataMovement, ConcatenateAlongMinorDim) {
  // [[1],[2]] ++ [[3,4],[5,6]] along dim 1 = [[1,3,4],[2,5,6]].
  Module m = parse_verified(R"(HloModule m
ENTRY main {
  a = f32[2,1] parameter(0)
  b = f32[2,2] parameter(1)
  ROOT c = f32[2,3] concatenate(a, b), dimensions={1}
})");
  EXPECT_EQ(evaluate(m, {f32({2, 1}, {1, 2}), f32({2, 2}, {3, 4, 5, 6})}).values(),
            (V{1, 3, 4, 2, 5, 6}));
}

TEST(DataMovement, ReverseOneAndAllDims) {
  // [[0,1,2],[3,4,5]]: reverse dim 1 -> [[2,1,0],[5,4,3]]; both dims -> 5..0.
  Module m = parse_verified(R"(HloModule m
ENTRY main {
  p = f32[2,3] parameter(0)
  a = f32[2,3] reverse(p), dimensions={1}
  b = f32[2,3] reverse(p), dimensions={0,1}
  ROOT t = (f32[2,3], f32[2,3]) tuple(a, b)
})");
  Literal r = evaluate(m, {iota_literal(DType::kF32, {2, 3})});
  EXPECT_EQ(r.element(0).values(), (V{2, 1, 0, 5, 4, 3}));
  EXPECT_EQ(r.element(1).values(), (V{5, 4, 3, 2, 1, 0}));
}

constexpr const char* kDynamicSlice1D = R"(HloModule m
ENTRY main {
  p = f32[5] parameter(0)
  i = s32[] parameter(1)
  ROOT d = f32[3] dynamic-slice(p, i), dynamic_slice_sizes={3}
})";

TEST(DataMovement, DynamicSliceClampsStartIntoRange) {
  // [0..4], size 3: start 1 -> {1,2,3}; start 3 clamps to 5-3 = 2 -> {2,3,4};
  // start -2 clamps to 0 -> {0,1,2}.
  Module m = parse_verified(kDynamicSlice1D);
  const Literal p = iota_literal(DType::kF32, {5});
  EXPECT_EQ(evaluate(m, {p, s32({}, {1})}).values(), (V{1, 2, 3}));
  EXPECT_EQ(evaluate(m, {p, s32({}, {3})}).values(), (V{2, 3, 4}));
  EXPECT_EQ(evaluate(m, {p, s32({}, {-2})}).values(), (V{0, 1, 2}));
}

TEST(DataMovement, DynamicSlice2DClampsEachDimension) {
  // [3,3] iota, start (1, 5), size [2,2]: col start clamps to 1 -> rows 1-2,
  // cols 1-2 = {4,5,7,8}.
  Module m = parse_verified(R"(HloModule m
ENTRY main {
  p = f32[3,3] parameter(0)
  i = s32[] parameter(1)
  j = s32[] parameter(2)
  ROOT d = f32[2,2] dynamic-slice(p, i, j), dynamic_slice_sizes={2,2}
})");
  EXPECT_EQ(evaluate(m, {iota_literal(DType::kF32, {3, 3}), s32({}, {1}), s32({}, {5})}).values(),
            (V{4, 5, 7, 8}));
}

TEST(DataMovement, DynamicUpdateSliceClampsStart) {
  // zeros[5], update {7,8} at 4: clamps to 5-2 = 3 -> {0,0,0,7,8}; at 1 -> {0,7,8,0,0}.
  Module m = parse_verified(R"(HloModule m
ENTRY main {
  p = f32[5] parameter(0)
  u = f32[2] parameter(1)
  i = s32[] parameter(2)
  ROOT d = f32[5] dynamic-update-slice(p, u, i)
})");
  const Literal zeros{Shape(DType::kF32, {5})};
  EXPECT_EQ(evaluate(m, {zeros, f32({2}, {7, 8}), s32({}, {4})}).values(), (V{0, 0, 0, 7, 8}));
  EXPECT_EQ(evaluate(m, {zeros, f32({2}, {7, 8}), s32({}, {1})}).values(), (V{0, 7, 8, 0, 0}));
}

// dynamic-slice of c64[3] {(0,1), (2,3), (4,5)} from 1, size 2: elements 1
// and 2 with both halves, {2,3,4,5}; a start of 2 clamps to 1 (3 - 2).
TEST(DataMovement, DynamicSliceOfComplexKeepsBothHalves) {
  Module m = parse_verified(R"(HloModule m
ENTRY main {
  p = c64[3] parameter(0)
  i = s32[] parameter(1)
  ROOT d = c64[2] dynamic-slice(p, i), dynamic_slice_sizes={2}
})");
  const Literal p = lit(DType::kC64, {3}, {0, 1, 2, 3, 4, 5});
  EXPECT_EQ(evaluate(m, {p, s32({}, {1})}).values(), (V{2, 3, 4, 5}));
  EXPECT_EQ(evaluate(m, {p, s32({}, {2})}).values(), (V{2, 3, 4, 5}));
  EXPECT_EQ(evaluate(m, {p, s32({}, {0})}).values(), (V{0, 1, 2, 3}));
}

}  // namespace
}  // namespace podsim::compiler::testing
