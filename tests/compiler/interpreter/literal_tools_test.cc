// Interpreter helpers: random_literal (seeded, ranges) and compare_literals
// (tolerance, exact integers, NaN, shapes, tuple leaves).
#include <algorithm>
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "tests/compiler/interpreter/interp_test_util.h"

namespace podsim::compiler::testing {
namespace {

TEST(RandomLiteral, SameSeedSameValueDifferentSeedDifferentValue) {
  const Shape s(DType::kF32, {8, 8});
  EXPECT_EQ(random_literal(s, 7), random_literal(s, 7));
  EXPECT_NE(random_literal(s, 7).values(), random_literal(s, 8).values());
}

TEST(RandomLiteral, ValueRangesPerDtype) {
  // Floats: multiples of 1/64 in [-1, 1]; s32 in [-8, 8]; u32 in [0, 15]; pred 0/1.
  Literal f = random_literal(Shape(DType::kBF16, {256}), 1);
  for (double v : f.values()) {
    EXPECT_LE(std::fabs(v), 1.0);
    EXPECT_EQ(v * 64, std::round(v * 64));
    EXPECT_EQ(v, round_to_dtype(DType::kBF16, v));
  }
  const Literal s = random_literal(Shape(DType::kS32, {256}), 2);
  for (double v : s.values()) {
    EXPECT_GE(v, -8);
    EXPECT_LE(v, 8);
    EXPECT_EQ(v, std::trunc(v));
  }
  const Literal u = random_literal(Shape(DType::kU32, {256}), 3);
  for (double v : u.values()) {
    EXPECT_GE(v, 0);
    EXPECT_LE(v, 15);
  }
  Literal p = random_literal(Shape(DType::kPred, {256}), 4);
  int ones = 0;
  for (double v : p.values()) {
    EXPECT_TRUE(v == 0 || v == 1);
    ones += v == 1;
  }
  EXPECT_GT(ones, 0);
  EXPECT_LT(ones, 256);
}

TEST(RandomLiteral, TuplesGetDistinctLeaves) {
  const Shape leaf(DType::kF32, {16});
  Literal t = random_literal(Shape::tuple({leaf, leaf}), 5);
  ASSERT_TRUE(t.is_tuple());
  EXPECT_EQ(t.element(0).shape(), leaf);
  EXPECT_NE(t.element(0).values(), t.element(1).values());
}

TEST(CompareLiterals, ToleranceIsRelativePlusAbsolute) {
  // |e - a| <= tol * (1 + |e|): for e = 1, tol 1e-6 allows up to 2e-6.
  Comparison ok = compare_literals(f32({2}, {1, 0}), f32({2}, {1 + 1.5e-6, 0}), 1e-6);
  EXPECT_TRUE(ok.ok) << ok.first_mismatch;
  EXPECT_NEAR(ok.max_abs_error, 1.5e-6, 1e-12);
  Comparison bad = compare_literals(f32({2}, {0, 1}), f32({2}, {0, 1.01}), 1e-6);
  EXPECT_FALSE(bad.ok);
  EXPECT_NE(bad.first_mismatch.find("[1]"), std::string::npos) << bad.first_mismatch;
  EXPECT_NEAR(bad.max_abs_error, 0.01, 1e-9);
}

TEST(CompareLiterals, IntegersExactNaNMatchesNaNShapesMustAgree) {
  EXPECT_FALSE(compare_literals(s32({1}, {1}), s32({1}, {2}), 10).ok);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(compare_literals(f32({1}, {nan}), f32({1}, {nan}), 0).ok);
  EXPECT_FALSE(compare_literals(f32({1}, {nan}), f32({1}, {0}), 0).ok);
  EXPECT_FALSE(compare_literals(f32({2}, {1, 2}), f32({1, 2}, {1, 2}), 0).ok);
}

TEST(CompareLiterals, TupleLeavesAreNamed) {
  Literal e = Literal::tuple({f32({1}, {1}), f32({2}, {2, 3})});
  Literal a = Literal::tuple({f32({1}, {1}), f32({2}, {2, 4})});
  Comparison c = compare_literals(e, a, 1e-3);
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.first_mismatch.find("{1}[1]"), std::string::npos) << c.first_mismatch;
  EXPECT_TRUE(compare_literals(e, e, 0).ok);
}

}  // namespace
}  // namespace podsim::compiler::testing

namespace podsim::compiler::testing {
namespace {

TEST(CompareScaleTest, LeafRmsAllowsTheSumsAbsoluteErrorNearZero) {
  // expected {0, 10, -10}, actual off by 0.5 at the zero; tolerance 0.1:
  // per element 0.5 > 0.1 x (1 + 0); with the RMS sqrt(200/3) = 8.16 the
  // allowance is 0.1 x 9.16 = 0.92.
  const Literal e = f32({3}, {0, 10, -10});
  const Literal a = f32({3}, {0.5, 10, -10});
  EXPECT_FALSE(compare_literals(e, a, 0.1).ok);
  EXPECT_TRUE(compare_literals(e, a, 0.1, CompareScale::kLeafRms).ok);
  // Off by 1 is beyond 0.92 either way.
  EXPECT_FALSE(compare_literals(e, f32({3}, {1, 10, -10}), 0.1, CompareScale::kLeafRms).ok);
}

TEST(CompareScaleTest, ComplexValuesCompareWithinTheTolerance) {
  const Literal e(Shape(DType::kC64, {1}), {1, 2});
  EXPECT_TRUE(compare_literals(e, Literal(Shape(DType::kC64, {1}), {1, 2.00001}), 1e-4).ok);
  EXPECT_FALSE(compare_literals(e, Literal(Shape(DType::kC64, {1}), {1, 2.1}), 1e-4).ok);
}

}  // namespace
}  // namespace podsim::compiler::testing

namespace podsim::compiler::testing {
namespace {

TEST(RandomLiteralDtypes, NewerTypesStayInTheirRange) {
  // Every value must be what the type holds: round_to_dtype leaves it unchanged.
  for (DType t :
       {DType::kS4, DType::kS2, DType::kU2, DType::kU4, DType::kS16, DType::kU16, DType::kU64,
        DType::kF8E4M3FN, DType::kF8E5M2, DType::kF8E3M4, DType::kC64, DType::kC128}) {
    const Literal l = random_literal(Shape(t, {64}), 7);
    ASSERT_EQ(l.values().size(), 64u * (is_complex(t) ? 2 : 1)) << dtype_name(t);
    for (double v : l.values()) EXPECT_EQ(round_to_dtype(t, v), v) << dtype_name(t) << " " << v;
  }
  // s2 reaches both ends of [-2, 1] in 64 draws (each missed with (3/4)^64).
  const Literal s2 = random_literal(Shape(DType::kS2, {64}), 7);
  EXPECT_EQ(*std::min_element(s2.values().begin(), s2.values().end()), -2);
  EXPECT_EQ(*std::max_element(s2.values().begin(), s2.values().end()), 1);
  // Complex parts are multiples of 1/64, not 0/1 only.
  const Literal c = random_literal(Shape(DType::kC64, {64}), 7);
  EXPECT_TRUE(
      std::any_of(c.values().begin(), c.values().end(), [](double v) { return v != 0 && v != 1; }));
  EXPECT_EQ(random_literal(Shape::scalar(DType::kToken), 7).values(), (std::vector<double>{0}));
}

}  // namespace
}  // namespace podsim::compiler::testing
