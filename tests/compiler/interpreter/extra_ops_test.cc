// Interpreter: XLA's less common ops (extra_ops.cc) on hand-built modules,
// values from closed forms: bitcast (layouts), bitcast-convert (IEEE bit
// patterns), sort, topk, fft (DFT of a delta / constant / cosine), map,
// select-and-scatter, cholesky, triangular-solve, batch-norm and the
// value-preserving ops.
#include <cmath>
#include <numbers>

#include <gtest/gtest.h>

#include "compiler/interpreter/cost_estimate.h"
#include "tests/compiler/interpreter/hand_built.h"
#include "tests/compiler/interpreter/interp_test_util.h"

namespace podsim::compiler::testing {
namespace {

using V = std::vector<double>;

Shape sh(DType t, std::vector<int64_t> dims) { return Shape(t, std::move(dims)); }

// evaluate(one op on the given parameters).
Literal run_op(Opcode opcode, const Shape& out, const std::vector<Literal>& args,
               const std::function<void(Instruction&)>& set = {}, Module* module = nullptr) {
  Module local("m");
  Module& m = module ? *module : local;
  HandBuilt b(m, "main");
  std::vector<InstrId> ops;
  for (size_t i = 0; i < args.size(); ++i)
    ops.push_back(b.param(static_cast<int64_t>(i), args[i].shape()));
  b.finish_entry(b.op(opcode, out, ops, set));
  return evaluate(m, args);
}

TEST(ExtraOps, BitcastWithoutLayoutsIsARowMajorReshape) {
  Literal r =
      run_op(Opcode::kBitcast, sh(DType::kF32, {3, 2}), {iota_literal(DType::kF32, {2, 3})});
  EXPECT_EQ(r.values(), (V{0, 1, 2, 3, 4, 5}));
}

TEST(ExtraOps, BitcastFollowsMinorToMajor) {
  // f32[2,3]{0,1} stores column-major: memory = a00 a10 a01 a11 a02 a12.
  // Read as row-major f32[3,2]{1,0} that is the transpose of a.
  Shape in = sh(DType::kF32, {2, 3});
  in.set_layout({0, 1});
  Shape out = sh(DType::kF32, {3, 2});
  out.set_layout({1, 0});
  Literal a = iota_literal(DType::kF32, {2, 3});  // [[0,1,2],[3,4,5]]
  Literal arg(in, a.values());
  EXPECT_EQ(run_op(Opcode::kBitcast, out, {arg}).values(), (V{0, 3, 1, 4, 2, 5}));
}

TEST(ExtraOps, BitcastConvertF32ToBytesLittleEndian) {
  // 1.0f = 0x3F800000 -> bytes 00 00 80 3F; -2.0f = 0xC0000000.
  Literal r = run_op(Opcode::kBitcastConvert, sh(DType::kU8, {2, 4}), {f32({2}, {1.0, -2.0})});
  EXPECT_EQ(r.values(), (V{0, 0, 128, 63, 0, 0, 0, 192}));
  // And back.
  Literal back = run_op(Opcode::kBitcastConvert, sh(DType::kF32, {2}), {r});
  EXPECT_EQ(back.values(), (V{1.0, -2.0}));
}

TEST(ExtraOps, BitcastConvertSameWidth) {
  // f32 -> s32: 1.0f = 1065353216, -2.0f = 0xC0000000 = -1073741824.
  EXPECT_EQ(run_op(Opcode::kBitcastConvert, sh(DType::kS32, {2}), {f32({2}, {1.0, -2.0})}).values(),
            (V{1065353216, -1073741824}));
  // bf16 1.0 = 0x3F80 = 16256 (u16); bf16 -1.0 = 0xBF80 = -16512 (s16).
  EXPECT_EQ(run_op(Opcode::kBitcastConvert, sh(DType::kU16, {1}), {lit(DType::kBF16, {1}, {1.0})})
                .values(),
            (V{16256}));
  EXPECT_EQ(run_op(Opcode::kBitcastConvert, sh(DType::kS16, {1}), {lit(DType::kBF16, {1}, {-1.0})})
                .values(),
            (V{-16512}));
  // f16 1.0 = 0x3C00 = 15360; 0x0001 is the smallest subnormal 2^-24.
  EXPECT_EQ(run_op(Opcode::kBitcastConvert, sh(DType::kU16, {1}), {lit(DType::kF16, {1}, {1.0})})
                .values(),
            (V{15360}));
  EXPECT_EQ(
      run_op(Opcode::kBitcastConvert, sh(DType::kF16, {1}), {lit(DType::kU16, {1}, {1})}).values(),
      (V{std::ldexp(1.0, -24)}));
  // u32 0xFFFFFFFF as s32 is -1.
  EXPECT_EQ(
      run_op(Opcode::kBitcastConvert, sh(DType::kS32, {1}), {lit(DType::kU32, {1}, {4294967295.0})})
          .values(),
      (V{-1}));
}

TEST(ExtraOps, SortIsVariadicWithAComparator) {
  Module m("m");
  const CompId less = [&] {
    HandBuilt c(m, "less");
    const InstrId a = c.param(0, Shape::scalar(DType::kF32));
    const InstrId b = c.param(1, Shape::scalar(DType::kF32));
    c.param(2, Shape::scalar(DType::kS32));
    c.param(3, Shape::scalar(DType::kS32));
    return c.finish(c.op(Opcode::kCompare, Shape::scalar(DType::kPred), {a, b},
                         [](Instruction& i) { i.attrs.comparison = ComparisonDirection::kLt; }));
  }();
  const Shape out = Shape::tuple({sh(DType::kF32, {5}), sh(DType::kS32, {5})});
  Literal r = run_op(
      Opcode::kSort, out, {f32({5}, {3, 1, 2, 5, 4}), iota_literal(DType::kS32, {5})},
      [&](Instruction& i) {
        i.attrs.dimensions = {0};
        i.attrs.is_stable = true;
        i.called = {less};
      },
      &m);
  EXPECT_EQ(r.element(0).values(), (V{1, 2, 3, 4, 5}));
  EXPECT_EQ(r.element(1).values(), (V{1, 2, 0, 4, 3}));
}

// XLA's total-order float comparator: the f32 bits as s32, negatives
// flipped (0x7FFFFFFF - bits), compared GT: a descending order in which
// -0.0 sorts below +0.0. The comparator's bitcast-converts run in the scalar
// fast path; the order is the total order's.
TEST(ExtraOps, SortWithTheTotalOrderComparatorOfBitcasts) {
  Literal r = testing::run(R"(HloModule m
gt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ia = s32[] bitcast-convert(a)
  ib = s32[] bitcast-convert(b)
  zero = s32[] constant(0)
  max = u32[] constant(2147483647)
  ua = u32[] bitcast-convert(a)
  ub = u32[] bitcast-convert(b)
  fa = u32[] subtract(max, ua)
  fb = u32[] subtract(max, ub)
  sa = s32[] bitcast-convert(fa)
  sb = s32[] bitcast-convert(fb)
  na = pred[] compare(ia, zero), direction=LT
  nb = pred[] compare(ib, zero), direction=LT
  ka = s32[] select(na, sa, ia)
  kb = s32[] select(nb, sb, ib)
  ROOT gt = pred[] compare(ka, kb), direction=GT
}
ENTRY e {
  x = f32[6] parameter(0)
  ROOT s = f32[6] sort(x), dimensions={0}, is_stable=true, to_apply=gt
})",
                           {f32({6}, {-1.5, 2, -0.0, 0, 7, -3})});
  const V got = r.values();
  ASSERT_EQ(got.size(), 6u);
  EXPECT_EQ(got[0], 7);
  EXPECT_EQ(got[1], 2);
  EXPECT_EQ(got[2], 0);
  EXPECT_FALSE(std::signbit(got[2]));  // +0.0 before -0.0
  EXPECT_EQ(got[3], 0);
  EXPECT_TRUE(std::signbit(got[3]));
  EXPECT_EQ(got[4], -1.5);
  EXPECT_EQ(got[5], -3);
}

TEST(ExtraOps, SortAlongTheFirstDimIsStable) {
  // Columns of [[2,1],[1,1],[0,1]] sorted along dim 0 by GT: column 0 ->
  // 2,1,0; column 1 all equal: stable keeps it.
  Module m("m");
  const CompId greater =
      scalar_fn(m, Opcode::kCompare, DType::kF32, DType::kPred, ComparisonDirection::kGt);
  Literal r = run_op(
      Opcode::kSort, sh(DType::kF32, {3, 2}), {f32({3, 2}, {0, 1, 1, 1, 2, 1})},
      [&](Instruction& i) {
        i.attrs.dimensions = {0};
        i.called = {greater};
      },
      &m);
  EXPECT_EQ(r.values(), (V{2, 1, 1, 1, 0, 1}));
}

TEST(ExtraOps, TopKLargestAndSmallestTiesByIndex) {
  const Shape out = Shape::tuple({sh(DType::kF32, {3}), sh(DType::kS32, {3})});
  Literal r = run_op(Opcode::kTopK, out, {f32({5}, {1, 5, 3, 5, 2})},
                     [](Instruction& i) { i.attrs.k = 3; });
  EXPECT_EQ(r.element(0).values(), (V{5, 5, 3}));
  EXPECT_EQ(r.element(1).values(), (V{1, 3, 2}));
  const Shape out2 = Shape::tuple({sh(DType::kF32, {2}), sh(DType::kS32, {2})});
  Literal s = run_op(Opcode::kTopK, out2, {f32({5}, {1, 5, 3, 5, 2})}, [](Instruction& i) {
    i.attrs.k = 2;
    i.attrs.largest = false;
  });
  EXPECT_EQ(s.element(0).values(), (V{1, 2}));
  EXPECT_EQ(s.element(1).values(), (V{0, 4}));
}

void expect_near(const V& actual, const V& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i)
    EXPECT_NEAR(actual[i], expected[i], 1e-6) << "at " << i;
}

Literal fft(const std::string& type, std::vector<int64_t> length, const Literal& x,
            const Shape& out) {
  return run_op(Opcode::kFft, out, {x}, [&](Instruction& i) {
    i.attrs.fft_type = type;
    i.attrs.fft_length = length;
  });
}

TEST(ExtraOps, FftOfADeltaIsAllOnesAndBack) {
  // DFT of delta[n] is 1 at every k; the inverse of all ones (scaled by 1/N)
  // is the delta again.
  const Shape c4 = sh(DType::kC64, {4});
  Literal delta(c4, {1, 0, 0, 0, 0, 0, 0, 0});
  expect_near(fft("FFT", {4}, delta, c4).values(), V{1, 0, 1, 0, 1, 0, 1, 0});
  Literal ones(c4, {1, 0, 1, 0, 1, 0, 1, 0});
  expect_near(fft("FFT", {4}, ones, c4).values(), V{4, 0, 0, 0, 0, 0, 0, 0});
  expect_near(fft("IFFT", {4}, ones, c4).values(), V{1, 0, 0, 0, 0, 0, 0, 0});
  // 2-D: a [2,2] delta transforms to all ones.
  const Shape c22 = sh(DType::kC64, {2, 2});
  Literal delta2(c22, {1, 0, 0, 0, 0, 0, 0, 0});
  expect_near(fft("FFT", {2, 2}, delta2, c22).values(), V{1, 0, 1, 0, 1, 0, 1, 0});
}

TEST(ExtraOps, RealFftKeepsHalfTheSpectrum) {
  // RFFT of cos(2 pi n / 4) = {1, 0, -1, 0}: N/2 = 2 at k = 1 (and k = 3,
  // dropped), zero elsewhere: {0, 2, 0}.
  expect_near(fft("RFFT", {4}, f32({4}, {1, 0, -1, 0}), sh(DType::kC64, {3})).values(),
              V{0, 0, 2, 0, 0, 0});
  // IRFFT of three ones (the spectrum of a delta) with length 4 is the delta.
  Literal ones(sh(DType::kC64, {3}), {1, 0, 1, 0, 1, 0});
  expect_near(fft("IRFFT", {4}, ones, sh(DType::kF32, {4})).values(), V{1, 0, 0, 0});
}

TEST(ExtraOps, MapAppliesTheComputationPerElement) {
  Module m("m");
  const CompId sub = scalar_fn(m, Opcode::kSubtract, DType::kF32, DType::kF32);
  Literal r = run_op(
      Opcode::kMap, sh(DType::kF32, {3}), {f32({3}, {5, 7, 9}), f32({3}, {1, 2, 3})},
      [&](Instruction& i) { i.called = {sub}; }, &m);
  EXPECT_EQ(r.values(), (V{4, 5, 6}));
}

Literal select_and_scatter(const Literal& operand, const Literal& source, int64_t size,
                           int64_t stride) {
  Module m("m");
  const CompId ge =
      scalar_fn(m, Opcode::kCompare, DType::kF32, DType::kPred, ComparisonDirection::kGe);
  const CompId add = scalar_fn(m, Opcode::kAdd, DType::kF32, DType::kF32);
  return run_op(
      Opcode::kSelectAndScatter, operand.shape(), {operand, source, f32({}, {0})},
      [&](Instruction& i) {
        WindowDim w;
        w.size = size;
        w.stride = stride;
        i.attrs.window = {w};
        i.called = {ge, add};
      },
      &m);
}

TEST(ExtraOps, SelectAndScatterScattersToEachWindowsMaximum) {
  // Windows [1,9] [3,7] [5,6] pick 9, 7, 6 (indices 1, 3, 5).
  EXPECT_EQ(select_and_scatter(f32({6}, {1, 9, 3, 7, 5, 6}), f32({3}, {10, 20, 30}), 2, 2).values(),
            (V{0, 10, 0, 20, 0, 30}));
  // Overlapping windows [1,5] [5,2] [2,8] pick 5, 5, 8: index 1 gets 1 + 2.
  EXPECT_EQ(select_and_scatter(f32({4}, {1, 5, 2, 8}), f32({3}, {1, 2, 3}), 2, 1).values(),
            (V{0, 3, 0, 3}));
}

TEST(ExtraOps, CholeskyLowerAndUpper) {
  // [[4,2],[2,3]] = L L^T with L = [[2,0],[1,sqrt 2]].
  const Shape s = sh(DType::kF64, {2, 2});
  Literal a(s, {4, 2, 2, 3});
  expect_near(
      run_op(Opcode::kCholesky, s, {a}, [](Instruction& i) { i.attrs.lower = true; }).values(),
      V{2, 0, 1, std::sqrt(2.0)});
  expect_near(
      run_op(Opcode::kCholesky, s, {a}, [](Instruction& i) { i.attrs.lower = false; }).values(),
      V{2, 1, 0, std::sqrt(2.0)});
}

Literal solve(const Literal& a, const Literal& b, bool left, bool lower,
              const std::string& transpose, bool unit) {
  return run_op(Opcode::kTriangularSolve, b.shape(), {a, b}, [&](Instruction& i) {
    i.attrs.left_side = left;
    i.attrs.lower = lower;
    i.attrs.transpose_a = transpose;
    i.attrs.unit_diagonal = unit;
  });
}

TEST(ExtraOps, TriangularSolve) {
  // a = [[2,0],[1,1]] (lower; the 9 above the diagonal is never read).
  Literal a = f32({2, 2}, {2, 9, 1, 1});
  // a x = (2, 3): x0 = 1, x1 = 3 - x0 = 2.
  expect_near(solve(a, f32({2, 1}, {2, 3}), true, true, "NO_TRANSPOSE", false).values(), V{1, 2});
  // a^T x = (2, 3): x1 = 3, 2 x0 + x1 = 2 -> x0 = -0.5.
  expect_near(solve(a, f32({2, 1}, {2, 3}), true, true, "TRANSPOSE", false).values(), V{-0.5, 3});
  // x a = (2, 3): (2 x0 + x1, x1) = (2, 3) -> x = (-0.5, 3).
  expect_near(solve(a, f32({1, 2}, {2, 3}), false, true, "NO_TRANSPOSE", false).values(),
              V{-0.5, 3});
  // Unit diagonal: [[1,0],[1,1]] x = (2, 3) -> (2, 1).
  expect_near(solve(a, f32({2, 1}, {2, 3}), true, true, "NO_TRANSPOSE", true).values(), V{2, 1});
  // Upper triangle of [[2,1],[9,1]]: [[2,1],[0,1]] x = (2, 3) -> x1 = 3, x0 = -0.5.
  expect_near(
      solve(f32({2, 2}, {2, 1, 9, 1}), f32({2, 1}, {2, 3}), true, false, "NO_TRANSPOSE", false)
          .values(),
      V{-0.5, 3});
}

TEST(ExtraOps, BatchNormInference) {
  // Feature 1: y = scale (x - mean) / sqrt(var) + offset; column 0: 2 (x-1)/2 + 1 = x; column 1: x
  // - 2.
  Literal r = run_op(Opcode::kBatchNormInference, sh(DType::kF32, {2, 2}),
                     {f32({2, 2}, {1, 2, 3, 4}), f32({2}, {2, 1}), f32({2}, {1, 0}),
                      f32({2}, {1, 2}), f32({2}, {4, 1})},
                     [](Instruction& i) { i.attrs.feature_index = 1; });
  EXPECT_EQ(r.values(), (V{1, 0, 3, 2}));
}

TEST(ExtraOps, BatchNormTrainingAndGrad) {
  // x = [[1,2],[3,6]], feature 1: mean (2, 4), biased var (1, 4), so the
  // normalised x is [[-1,-1],[1,1]].
  const Literal x = f32({2, 2}, {1, 2, 3, 6});
  const Shape vec = sh(DType::kF32, {2});
  const Shape out = Shape::tuple({sh(DType::kF32, {2, 2}), vec, vec});
  auto feature = [](Instruction& i) { i.attrs.feature_index = 1; };
  Literal t =
      run_op(Opcode::kBatchNormTraining, out, {x, f32({2}, {1, 1}), f32({2}, {0, 0})}, feature);
  EXPECT_EQ(t.element(0).values(), (V{-1, -1, 1, 1}));
  EXPECT_EQ(t.element(1).values(), (V{2, 4}));
  EXPECT_EQ(t.element(2).values(), (V{1, 4}));
  // Gradient with dy = x_hat: dscale = sum x_hat^2 = m = 2, doffset = sum
  // x_hat = 0, dx = scale/(sigma m) (m x_hat - 0 - x_hat m) = 0.
  Literal g =
      run_op(Opcode::kBatchNormGrad, out,
             {x, f32({2}, {1, 1}), f32({2}, {2, 4}), f32({2}, {1, 4}), f32({2, 2}, {-1, -1, 1, 1})},
             feature);
  expect_near(g.element(0).values(), V{0, 0, 0, 0});
  expect_near(g.element(1).values(), V{2, 2});
  expect_near(g.element(2).values(), V{0, 0});
}

TEST(ExtraOps, ValuePreservingOps) {
  const Literal x = f32({3, 7}, V(21, 1.5));
  EXPECT_EQ(run_op(Opcode::kGetDimensionSize, Shape::scalar(DType::kS32), {x},
                   [](Instruction& i) { i.attrs.dimensions = {1}; })
                .values(),
            (V{7}));
  EXPECT_EQ(run_op(Opcode::kDomain, x.shape(), {x}), x);
  EXPECT_EQ(run_op(Opcode::kSetDimensionSize, x.shape(), {x, s32({}, {2})}), x);
  EXPECT_EQ(
      run_op(Opcode::kDynamicReshape, sh(DType::kF32, {7, 3}), {x, s32({}, {7}), s32({}, {3})})
          .values(),
      x.values());
  const Literal tuple = Literal::tuple({x, s32({}, {4})});
  EXPECT_EQ(run_op(Opcode::kOptimizationBarrier, tuple.shape(), {tuple}), tuple);
  const Literal token = run_op(Opcode::kAfterAll, Shape::scalar(DType::kToken), {});
  EXPECT_EQ(token.shape().dtype(), DType::kToken);
  EXPECT_EQ(run_op(Opcode::kAddDependency, x.shape(), {x, token}), x);
}

}  // namespace
}  // namespace podsim::compiler::testing

namespace podsim::compiler::testing {
namespace {

TEST(ExtraOps, TopKCustomCallOrdersByItsComparator) {
  // XLA's custom-call "TopK": k from the result (2), order from the
  // comparator (a, b, index a, index b) -> a > b: the two largest per row.
  Module m("m");
  const CompId greater = [&] {
    HandBuilt c(m, "gt");
    const InstrId a = c.param(0, Shape::scalar(DType::kF32));
    const InstrId b = c.param(1, Shape::scalar(DType::kF32));
    c.param(2, Shape::scalar(DType::kS32));
    c.param(3, Shape::scalar(DType::kS32));
    return c.finish(c.op(Opcode::kCompare, Shape::scalar(DType::kPred), {a, b},
                         [](Instruction& i) { i.attrs.comparison = ComparisonDirection::kGt; }));
  }();
  const Shape out = Shape::tuple({Shape(DType::kF32, {2, 2}), Shape(DType::kS32, {2, 2})});
  HandBuilt b(m, "main");
  const InstrId x = b.param(0, Shape(DType::kF32, {2, 4}));
  b.finish_entry(b.op(Opcode::kCustomCall, out, {x}, [&](Instruction& i) {
    i.attrs.custom_call_target = "TopK";
    i.called = {greater};
  }));
  EXPECT_NO_THROW(check_interpretable(m));
  Literal r = evaluate(m, {f32({2, 4}, {1, 4, 2, 3, 8, 5, 7, 6})});
  EXPECT_EQ(r.element(0).values(), (std::vector<double>{4, 3, 8, 7}));
  EXPECT_EQ(r.element(1).values(), (std::vector<double>{1, 3, 0, 2}));
}

}  // namespace
}  // namespace podsim::compiler::testing

namespace podsim::compiler::testing {
namespace {

TEST(ExtraOps, ComplexDot) {
  // [1+2i, i] . [3, i] = 3 + 6i + i^2 = 2 + 6i.
  Literal r = run_op(Opcode::kDot, Shape(DType::kC64, {}),
                     {Literal(Shape(DType::kC64, {2}), {1, 2, 0, 1}),
                      Literal(Shape(DType::kC64, {2}), {3, 0, 0, 1})},
                     [](Instruction& i) {
                       i.attrs.dot.lhs_contracting = {0};
                       i.attrs.dot.rhs_contracting = {0};
                     });
  EXPECT_EQ(r.values(), (std::vector<double>{2, 6}));
}

TEST(ExtraOps, ComplexDataMovementIsRefusedByName) {
  Module m("m");
  HandBuilt b(m, "main");
  const InstrId x = b.param(0, Shape(DType::kC64, {2, 3}));
  b.finish_entry(b.op(Opcode::kReverse, Shape(DType::kC64, {2, 3}), {x},
                      [](Instruction& i) { i.attrs.dimensions = {1}; }));
  try {
    check_interpretable(m);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.message(),
              "the interpreter cannot run 1 instruction: reverse on complex values (x1)");
  }
}

// c64[2,3] with element (i, j) = (10i + j) + (100 + 10i + j)i, stored as
// (real, imag) pairs; its transpose is element (j, i) of the input.
TEST(ExtraOps, ComplexTransposeAndBroadcastMoveWholePairs) {
  V values;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      values.push_back(10 * i + j);
      values.push_back(100 + 10 * i + j);
    }
  const Literal x(sh(DType::kC64, {2, 3}), values);
  Literal t = run_op(Opcode::kTranspose, sh(DType::kC64, {3, 2}), {x}, [](Instruction& i) {
    i.attrs.dimensions = {1, 0};
  });
  EXPECT_EQ(t.values(), (V{0, 100, 10, 110, 1, 101, 11, 111, 2, 102, 12, 112}));
  // Broadcast of c64[2] = {1+2i, 3+4i} along dim 1 of c64[3,2]: three copies of the row.
  Literal row(sh(DType::kC64, {2}), V{1, 2, 3, 4});
  Literal r = run_op(Opcode::kBroadcast, sh(DType::kC64, {3, 2}), {row},
                     [](Instruction& i) { i.attrs.dimensions = {1}; });
  EXPECT_EQ(r.values(), (V{1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4}));
}

}  // namespace
}  // namespace podsim::compiler::testing
