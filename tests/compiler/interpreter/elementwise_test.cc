// Interpreter: elementwise unary/binary/compare/convert/select/clamp, incl.
// dtype rounding (bf16, f32), integer wrap-around and integer division rules.
#include <cmath>
#include <limits>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/compiler/interpreter/interp_test_util.h"

namespace podsim::compiler::testing {
namespace {

using V = std::vector<double>;
const double kNaN = std::numeric_limits<double>::quiet_NaN();

// Evaluates `op` (binary, same dtype in and out) on two rank-1 operands.
Literal binary(const std::string& op, DType dt, const V& a, const V& b) {
  const std::string type = fmt::format("{}[{}]", dtype_name(dt), a.size());
  const std::string hlo = fmt::format(R"(HloModule m
ENTRY main {{
  a = {0} parameter(0)
  b = {0} parameter(1)
  ROOT r = {0} {1}(a, b)
}})", type, op);
  const auto n = static_cast<int64_t>(a.size());
  return run(hlo, {lit(dt, {n}, a), lit(dt, {n}, b)});
}

Literal unary(const std::string& op, DType dt, const V& a) {
  const std::string type = fmt::format("{}[{}]", dtype_name(dt), a.size());
  const std::string hlo = fmt::format(R"(HloModule m
ENTRY main {{
  a = {0} parameter(0)
  ROOT r = {0} {1}(a)
}})", type, op);
  return run(hlo, {lit(dt, {static_cast<int64_t>(a.size())}, a)});
}

Literal convert(DType from, DType to, const V& a) {
  const std::string hlo = fmt::format(R"(HloModule m
ENTRY main {{
  a = {0}[{2}] parameter(0)
  ROOT r = {1}[{2}] convert(a)
}})", dtype_name(from), dtype_name(to), a.size());
  return run(hlo, {lit(from, {static_cast<int64_t>(a.size())}, a)});
}

TEST(Elementwise, Bf16AddRoundsToNearestEven) {
  // bf16 keeps 8 significant bits: neighbours of 1 are 1 and 1 + 2^-7.
  // 1 + 2^-8 is the midpoint -> even (1.0); 1 + 3*2^-8 is the midpoint of
  // 1 + 2^-7 (odd last bit) and 1 + 2^-6 (even) -> 1 + 2^-6 = 1.015625.
  Literal r = binary("add", DType::kBF16, {1, 1}, {std::ldexp(1, -8), 3 * std::ldexp(1, -8)});
  EXPECT_EQ(r.values(), (V{1.0, 1.015625}));
}

TEST(Elementwise, F32AddRoundsAtTwentyFourBits) {
  // 1 + 2^-24 is the midpoint of 1 and 1 + 2^-23 -> 1 (even); 1 + 2^-23 exact.
  Literal r = binary("add", DType::kF32, {1, 1}, {std::ldexp(1, -24), std::ldexp(1, -23)});
  EXPECT_EQ(r.values(), (V{1.0, 1.0 + std::ldexp(1, -23)}));
}

TEST(Elementwise, IntegerArithmeticWraps) {
  // s32: (2^31 - 1) + 1 = -2^31; 65536 * 65536 = 2^32 = 0 mod 2^32.
  EXPECT_EQ(binary("add", DType::kS32, {2147483647}, {1}).values(), (V{-2147483648.0}));
  EXPECT_EQ(binary("multiply", DType::kS32, {65536}, {65536}).values(), (V{0}));
  // s8: 100 + 100 = 200 - 256 = -56; u8: 3 - 5 = 256 - 2 = 254.
  EXPECT_EQ(binary("add", DType::kS8, {100}, {100}).values(), (V{-56}));
  EXPECT_EQ(binary("subtract", DType::kU8, {3}, {5}).values(), (V{254}));
  // negate(-2^31) wraps back to -2^31.
  EXPECT_EQ(unary("negate", DType::kS32, {-2147483648.0}).values(), (V{-2147483648.0}));
}

TEST(Elementwise, IntegerDivisionTruncatesAndHasDefinedEdgeCases) {
  // C truncation: -7/2 = -3, 7/-2 = -3; remainders take the dividend's sign.
  // x/0 = -1 (all bits), x%0 = x, INT_MIN/-1 = INT_MIN, INT_MIN%-1 = 0.
  EXPECT_EQ(binary("divide", DType::kS32, {-7, 7, 5, -2147483648.0}, {2, -2, 0, -1}).values(),
            (V{-3, -3, -1, -2147483648.0}));
  EXPECT_EQ(binary("remainder", DType::kS32, {-7, 7, 5, -2147483648.0}, {2, -2, 0, -1}).values(),
            (V{-1, 1, 5, 0}));
  // Unsigned: 7/0 = all bits set = 2^32 - 1.
  EXPECT_EQ(binary("divide", DType::kU32, {7}, {0}).values(), (V{4294967295.0}));
}

TEST(Elementwise, FloatRemainderIsFmod) {
  // fmod(-7.5, 2) = -1.5 (sign of the dividend); fmod(7.5, -2) = 1.5.
  EXPECT_EQ(binary("remainder", DType::kF32, {-7.5, 7.5}, {2, -2}).values(), (V{-1.5, 1.5}));
}

TEST(Elementwise, PowerOnIntegersAndFloats) {
  // 3^4 = 81; 2^-1 truncates to 0; (-1)^-3 = -1; 1^-5 = 1; 2^10 = 1024.
  EXPECT_EQ(binary("power", DType::kS32, {3, 2, -1, 1, 2}, {4, -1, -3, -5, 10}).values(),
            (V{81, 0, -1, 1, 1024}));
  // f32 2^0.5 = sqrt(2) rounded to float.
  EXPECT_EQ(binary("power", DType::kF32, {2}, {0.5}).values(), (V{static_cast<double>(std::sqrt(2.0f))}));
}

TEST(Elementwise, MaximumMinimumPropagateNaN) {
  Literal mx = binary("maximum", DType::kF32, {1, kNaN, -3}, {2, 1, -4});
  EXPECT_EQ(mx.values()[0], 2);
  EXPECT_TRUE(std::isnan(mx.values()[1]));
  EXPECT_EQ(mx.values()[2], -3);
  Literal mn = binary("minimum", DType::kF32, {1, 0}, {2, kNaN});
  EXPECT_EQ(mn.values()[0], 1);
  EXPECT_TRUE(std::isnan(mn.values()[1]));
}

TEST(Elementwise, BitwiseOpsOnIntegersLogicalOnPred) {
  // 12 = 1100b, 10 = 1010b: and 1000b = 8, or 1110b = 14, xor 0110b = 6; not 12 = -13.
  EXPECT_EQ(binary("and", DType::kS32, {12}, {10}).values(), (V{8}));
  EXPECT_EQ(binary("or", DType::kS32, {12}, {10}).values(), (V{14}));
  EXPECT_EQ(binary("xor", DType::kS32, {12}, {10}).values(), (V{6}));
  EXPECT_EQ(unary("not", DType::kS32, {12}).values(), (V{-13}));
  // u8: not 5 = 255 - 5 = 250.
  EXPECT_EQ(unary("not", DType::kU8, {5}).values(), (V{250}));
  // pred truth tables.
  EXPECT_EQ(binary("and", DType::kPred, {0, 0, 1, 1}, {0, 1, 0, 1}).values(), (V{0, 0, 0, 1}));
  EXPECT_EQ(binary("or", DType::kPred, {0, 0, 1, 1}, {0, 1, 0, 1}).values(), (V{0, 1, 1, 1}));
  EXPECT_EQ(binary("xor", DType::kPred, {0, 0, 1, 1}, {0, 1, 0, 1}).values(), (V{0, 1, 1, 0}));
  EXPECT_EQ(unary("not", DType::kPred, {0, 1}).values(), (V{1, 0}));
}

TEST(Elementwise, BitwiseOpOnFloatsIsAUserError) {
  EXPECT_THROW(binary("and", DType::kF32, {1}, {1}), UserError);
}

TEST(Elementwise, UnaryOpsAtExactPoints) {
  // Values where the closed forms are exact.
  EXPECT_EQ(unary("negate", DType::kF32, {2, -0.5}).values(), (V{-2, 0.5}));
  EXPECT_EQ(unary("exponential", DType::kF32, {0}).values(), (V{1}));
  EXPECT_EQ(unary("exponential-minus-one", DType::kF32, {0}).values(), (V{0}));
  EXPECT_EQ(unary("log", DType::kF32, {1}).values(), (V{0}));
  EXPECT_EQ(unary("log-plus-one", DType::kF32, {0}).values(), (V{0}));
  EXPECT_EQ(unary("sqrt", DType::kF32, {4, 0.25}).values(), (V{2, 0.5}));
  EXPECT_EQ(unary("rsqrt", DType::kF32, {4}).values(), (V{0.5}));
  EXPECT_EQ(unary("abs", DType::kF32, {-3, 2}).values(), (V{3, 2}));
  EXPECT_EQ(unary("sign", DType::kF32, {-2, 0, 5}).values(), (V{-1, 0, 1}));
  EXPECT_EQ(unary("sign", DType::kS32, {-7, 0, 9}).values(), (V{-1, 0, 1}));
  EXPECT_EQ(unary("floor", DType::kF32, {-1.5, 1.5}).values(), (V{-2, 1}));
  EXPECT_EQ(unary("ceil", DType::kF32, {-1.5, 1.5}).values(), (V{-1, 2}));
  EXPECT_EQ(unary("cosine", DType::kF32, {0}).values(), (V{1}));
  EXPECT_EQ(unary("sine", DType::kF32, {0}).values(), (V{0}));
  EXPECT_EQ(unary("tanh", DType::kF32, {0}).values(), (V{0}));
  EXPECT_EQ(unary("logistic", DType::kF32, {0}).values(), (V{0.5}));
  EXPECT_EQ(unary("copy", DType::kF32, {1.25}).values(), (V{1.25}));
  // exp(1) is e rounded to float.
  EXPECT_EQ(unary("exponential", DType::kF32, {1}).values(), (V{static_cast<double>(static_cast<float>(M_E))}));
  // abs(-128) in s8 wraps to -128.
  EXPECT_EQ(unary("abs", DType::kS8, {-128}).values(), (V{-128}));
}

TEST(Elementwise, ConvertFloatToIntTruncatesAndSaturates) {
  // 2.7 -> 2, -2.7 -> -2 (toward zero); 3e9 -> 2^31-1, -3e9 -> -2^31; NaN -> 0.
  EXPECT_EQ(convert(DType::kF32, DType::kS32, {2.7, -2.7, 3e9, -3e9, kNaN}).values(),
            (V{2, -2, 2147483647.0, -2147483648.0, 0}));
  // u8 saturates at 0 and 255.
  EXPECT_EQ(convert(DType::kF32, DType::kU8, {-1.5, 300}).values(), (V{0, 255}));
}

TEST(Elementwise, ConvertBetweenIntegersWrapsAndToPredTestsNonZero) {
  // 300 mod 256 = 44; -1 as u32 = 2^32 - 1.
  EXPECT_EQ(convert(DType::kS32, DType::kS8, {300}).values(), (V{44}));
  EXPECT_EQ(convert(DType::kS32, DType::kU32, {-1}).values(), (V{4294967295.0}));
  EXPECT_EQ(convert(DType::kF32, DType::kPred, {0, 0.5, -2}).values(), (V{0, 1, 1}));
  // f32 1 + 2^-8 -> bf16 ties to even 1.0; s32 7 -> f32 7.
  EXPECT_EQ(convert(DType::kF32, DType::kBF16, {1 + std::ldexp(1, -8)}).values(), (V{1}));
  EXPECT_EQ(convert(DType::kS32, DType::kF32, {7}).values(), (V{7}));
}

TEST(Elementwise, CompareDirectionsAndNaN) {
  // a = {1, 2, 3, NaN}, b = {2, 2, 2, 1}.
  Module m = parse_verified(R"(HloModule m
ENTRY main {
  a = f32[4] parameter(0)
  b = f32[4] parameter(1)
  eq = pred[4] compare(a, b), direction=EQ
  ne = pred[4] compare(a, b), direction=NE
  lt = pred[4] compare(a, b), direction=LT
  le = pred[4] compare(a, b), direction=LE
  gt = pred[4] compare(a, b), direction=GT
  ge = pred[4] compare(a, b), direction=GE
  ROOT t = (pred[4], pred[4], pred[4], pred[4], pred[4], pred[4]) tuple(eq, ne, lt, le, gt, ge)
})");
  Literal r = evaluate(m, {f32({4}, {1, 2, 3, kNaN}), f32({4}, {2, 2, 2, 1})});
  EXPECT_EQ(r.element(0).values(), (V{0, 1, 0, 0}));  // EQ
  EXPECT_EQ(r.element(1).values(), (V{1, 0, 1, 1}));  // NE (NaN != x)
  EXPECT_EQ(r.element(2).values(), (V{1, 0, 0, 0}));  // LT
  EXPECT_EQ(r.element(3).values(), (V{1, 1, 0, 0}));  // LE
  EXPECT_EQ(r.element(4).values(), (V{0, 0, 1, 0}));  // GT
  EXPECT_EQ(r.element(5).values(), (V{0, 1, 1, 0}));  // GE
}

TEST(Elementwise, SelectAndClampWithScalarBounds) {
  // select picks b where p is false; clamp(0, x, 2) bounds to [0, 2].
  Module m = parse_verified(R"(HloModule m
ENTRY main {
  p = pred[3] parameter(0)
  a = f32[3] parameter(1)
  b = f32[3] parameter(2)
  s = f32[3] select(p, a, b)
  lo = f32[] constant(0)
  hi = f32[] constant(2)
  c = f32[3] clamp(lo, a, hi)
  ROOT t = (f32[3], f32[3]) tuple(s, c)
})");
  Literal r = evaluate(m, {lit(DType::kPred, {3}, {1, 0, 1}), f32({3}, {-1, 1, 5}), f32({3}, {10, 20, 30})});
  EXPECT_EQ(r.element(0).values(), (V{-1, 20, 5}));
  EXPECT_EQ(r.element(1).values(), (V{0, 1, 2}));
}

}  // namespace
}  // namespace podsim::compiler::testing
