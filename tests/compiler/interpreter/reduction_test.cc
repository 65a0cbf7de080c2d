// Interpreter: reduce (single and variadic / argmax-style, fast and general
// combiner paths) and reduce-window (strides, padding, dilations).
#include <gtest/gtest.h>

#include "tests/compiler/interpreter/interp_test_util.h"

namespace podsim::compiler::testing {
namespace {

using V = std::vector<double>;

TEST(Reduce, SumAndMaxOverDimensions) {
  // in = [[0,1,2],[3,4,5]]: sum over dim 1 = {3, 12}; over both = 15;
  // max over dim 0 = {3,4,5}.
  Module m = parse_verified(R"(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] maximum(a, b)
}
ENTRY main {
  p = f32[2,3] parameter(0)
  z = f32[] constant(0)
  lo = f32[] constant(-100)
  rows = f32[2] reduce(p, z), dimensions={1}, to_apply=add
  all = f32[] reduce(p, z), dimensions={0,1}, to_apply=add
  cols = f32[3] reduce(p, lo), dimensions={0}, to_apply=max
  ROOT t = (f32[2], f32[], f32[3]) tuple(rows, all, cols)
})");
  Literal r = evaluate(m, {iota_literal(DType::kF32, {2, 3})});
  EXPECT_EQ(r.element(0).values(), (V{3, 12}));
  EXPECT_EQ(r.element(1).values(), (V{15}));
  EXPECT_EQ(r.element(2).values(), (V{3, 4, 5}));
}

TEST(Reduce, GeneralBodyFallbackGivesSameSum) {
  // The body wraps add in a reshape, which the scalar fast paths do not
  // handle, so the full evaluator runs it: still row sums {3, 12}.
  Module m = parse_verified(R"(HloModule m
add_reshaped {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  s = f32[] add(a, b)
  ROOT r = f32[] reshape(s)
}
ENTRY main {
  p = f32[2,3] parameter(0)
  z = f32[] constant(0)
  ROOT rows = f32[2] reduce(p, z), dimensions={1}, to_apply=add_reshaped
})");
  EXPECT_EQ(evaluate(m, {iota_literal(DType::kF32, {2, 3})}).values(), (V{3, 12}));
}

TEST(Reduce, SubtractBodyKeepsOperandOrder) {
  // Non-commutative fast path: acc = acc - x from init 0 over {1,2,3} = -6;
  // with the body b - a: acc = x - acc: 1-0=1, 2-1=1, 3-1=2.
  Module m = parse_verified(R"(HloModule m
sub {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] subtract(a, b)
}
rsub {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] subtract(b, a)
}
ENTRY main {
  p = f32[3] parameter(0)
  z = f32[] constant(0)
  x = f32[] reduce(p, z), dimensions={0}, to_apply=sub
  y = f32[] reduce(p, z), dimensions={0}, to_apply=rsub
  ROOT t = (f32[], f32[]) tuple(x, y)
})");
  Literal r = evaluate(m, {f32({3}, {1, 2, 3})});
  EXPECT_EQ(r.element(0).values(), (V{-6}));
  EXPECT_EQ(r.element(1).values(), (V{2}));
}

TEST(Reduce, VariadicArgmaxTakesFirstMaximum) {
  // Row 0 = {3,7,7,1}: max 7, first at index 1 (ties keep the smaller index).
  // Row 1 = {-1,-5,2,0}: max 2 at index 2.
  Module m = parse_verified(R"(HloModule m
argmax {
  av = f32[] parameter(0)
  ai = s32[] parameter(1)
  bv = f32[] parameter(2)
  bi = s32[] parameter(3)
  gt = pred[] compare(av, bv), direction=GT
  eq = pred[] compare(av, bv), direction=EQ
  lt = pred[] compare(ai, bi), direction=LT
  tie = pred[] and(eq, lt)
  keep = pred[] or(gt, tie)
  v = f32[] select(keep, av, bv)
  i = s32[] select(keep, ai, bi)
  ROOT t = (f32[], s32[]) tuple(v, i)
}
ENTRY main {
  p = f32[2,4] parameter(0)
  idx = s32[2,4] iota(), iota_dimension=1
  lo = f32[] constant(-1000)
  none = s32[] constant(-1)
  ROOT r = (f32[2], s32[2]) reduce(p, idx, lo, none), dimensions={1}, to_apply=argmax
})");
  Literal r = evaluate(m, {f32({2, 4}, {3, 7, 7, 1, -1, -5, 2, 0})});
  EXPECT_EQ(r.element(0).values(), (V{7, 2}));
  EXPECT_EQ(r.element(1).values(), (V{1, 2}));
}

constexpr const char* kAddBody = R"(
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
)";

Literal window_sum(const std::string& window, const std::string& out_type, const Literal& input,
                   double init = 0) {
  const std::string in_type = input.shape().to_string(false);
  const std::string hlo = "HloModule m\n" + std::string(kAddBody) +
                          "ENTRY main {\n  p = " + in_type +
                          " parameter(0)\n  z = f32[] parameter(1)\n  ROOT r = " + out_type +
                          " reduce-window(p, z), window={" + window + "}, to_apply=add\n}\n";
  return run(hlo, {input, f32({}, {init})});
}

TEST(ReduceWindow, SlidingSumWithAndWithoutPadding) {
  // {1,2,3,4,5}, size 2 stride 1: {3,5,7,9}. Padding 1 each side adds
  // windows [pad,1] = 1 and [5,pad] = 5: {1,3,5,7,9,5}.
  const Literal in = f32({5}, {1, 2, 3, 4, 5});
  EXPECT_EQ(window_sum("size=2", "f32[4]", in).values(), (V{3, 5, 7, 9}));
  EXPECT_EQ(window_sum("size=2 pad=1_1", "f32[6]", in).values(), (V{1, 3, 5, 7, 9, 5}));
  // Strided: size 2 stride 2 over 5 elements -> (5-2)/2+1 = 2 windows {3, 7}.
  EXPECT_EQ(window_sum("size=2 stride=2", "f32[2]", in).values(), (V{3, 7}));
}

TEST(ReduceWindow, InitValueEntersEachWindowOnce) {
  // init 10, size 2 over {1,2,3}: {10+1+2, 10+2+3} = {13, 15}.
  EXPECT_EQ(window_sum("size=2", "f32[2]", f32({3}, {1, 2, 3}), 10).values(), (V{13, 15}));
}

TEST(ReduceWindow, BaseAndWindowDilation) {
  // Base dilation 2: {1,2,3} becomes [1,_,2,_,3] (5 positions); size-2
  // windows: [1,_]=1, [_,2]=2, [2,_]=2, [_,3]=3.
  EXPECT_EQ(window_sum("size=2 lhs_dilate=2", "f32[4]", f32({3}, {1, 2, 3})).values(),
            (V{1, 2, 2, 3}));
  // Window dilation 2: size 2 spans 3 positions; over {1..5}: {1+3, 2+4, 3+5}.
  EXPECT_EQ(window_sum("size=2 rhs_dilate=2", "f32[3]", f32({5}, {1, 2, 3, 4, 5})).values(),
            (V{4, 6, 8}));
}

TEST(ReduceWindow, MaxPool2D) {
  // [4,4] iota, 2x2 windows stride 2: maxima at the bottom-right of each
  // block: 5, 7, 13, 15.
  Module m = parse_verified(R"(HloModule m
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] maximum(a, b)
}
ENTRY main {
  p = f32[4,4] parameter(0)
  lo = f32[] constant(-1000)
  ROOT r = f32[2,2] reduce-window(p, lo), window={size=2x2 stride=2x2}, to_apply=max
})");
  EXPECT_EQ(evaluate(m, {iota_literal(DType::kF32, {4, 4})}).values(), (V{5, 7, 13, 15}));
}

}  // namespace
}  // namespace podsim::compiler::testing
