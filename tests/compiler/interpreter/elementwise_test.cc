// Interpreter: elementwise unary/binary/compare/convert/select/clamp, incl.
// dtype rounding (bf16, f32), integer wrap-around and integer division rules.
#include <cmath>
#include <limits>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/compiler/interpreter/hand_built.h"
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
}})",
                                      type, op);
  const auto n = static_cast<int64_t>(a.size());
  return run(hlo, {lit(dt, {n}, a), lit(dt, {n}, b)});
}

Literal unary(const std::string& op, DType dt, const V& a) {
  const std::string type = fmt::format("{}[{}]", dtype_name(dt), a.size());
  const std::string hlo = fmt::format(R"(HloModule m
ENTRY main {{
  a = {0} parameter(0)
  ROOT r = {0} {1}(a)
}})",
                                      type, op);
  return run(hlo, {lit(dt, {static_cast<int64_t>(a.size())}, a)});
}

Literal convert(DType from, DType to, const V& a) {
  const std::string hlo = fmt::format(R"(HloModule m
ENTRY main {{
  a = {0}[{2}] parameter(0)
  ROOT r = {1}[{2}] convert(a)
}})",
                                      dtype_name(from), dtype_name(to), a.size());
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
  EXPECT_EQ(binary("power", DType::kF32, {2}, {0.5}).values(),
            (V{static_cast<double>(std::sqrt(2.0f))}));
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
  EXPECT_EQ(unary("exponential", DType::kF32, {1}).values(),
            (V{static_cast<double>(static_cast<float>(M_E))}));
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
  Literal r = evaluate(
      m, {lit(DType::kPred, {3}, {1, 0, 1}), f32({3}, {-1, 1, 5}), f32({3}, {10, 20, 30})});
  EXPECT_EQ(r.element(0).values(), (V{-1, 20, 5}));
  EXPECT_EQ(r.element(1).values(), (V{0, 1, 2}));
}

}  // namespace
}  // namespace podsim::compiler::testing

// ---- XLA's newer elementwise ops (hand-built: the reader does not read them yet).

namespace podsim::compiler::testing {
namespace {

Literal op1(Opcode op, DType in, DType out, const std::vector<double>& a,
            const std::function<void(Instruction&)>& set = {}) {
  Module m("m");
  HandBuilt b(m, "main");
  const auto n = static_cast<int64_t>(is_complex(in) ? a.size() / 2 : a.size());
  const InstrId x = b.param(0, Shape(in, {n}));
  b.finish_entry(b.op(op, Shape(out, {n}), {x}, set));
  return evaluate(m, {lit(in, {n}, a)});
}

Literal op2(Opcode op, DType in, DType out, const std::vector<double>& a,
            const std::vector<double>& c) {
  Module m("m");
  HandBuilt b(m, "main");
  const auto n = static_cast<int64_t>(is_complex(in) ? a.size() / 2 : a.size());
  const InstrId x = b.param(0, Shape(in, {n}));
  const InstrId y = b.param(1, Shape(in, {n}));
  b.finish_entry(b.op(op, Shape(out, {n}), {x, y}));
  return evaluate(m, {lit(in, {n}, a), lit(in, {n}, c)});
}

using W = std::vector<double>;

TEST(NewElementwise, PopcntAndClzCountTheDtypesBits) {
  // 7 = 0b111 -> 3; -1 in s32 is 32 ones; 255 in u8 is 8 ones.
  EXPECT_EQ(op1(Opcode::kPopcnt, DType::kS32, DType::kS32, {7, -1, 0}).values(), (W{3, 32, 0}));
  EXPECT_EQ(op1(Opcode::kPopcnt, DType::kU8, DType::kU8, {255}).values(), (W{8}));
  // clz: 1 has 31 leading zeros in 32 bits, 0 has 32, a negative none; u8 1 -> 7.
  EXPECT_EQ(op1(Opcode::kClz, DType::kS32, DType::kS32, {1, 0, -1}).values(), (W{31, 32, 0}));
  EXPECT_EQ(op1(Opcode::kClz, DType::kU8, DType::kU8, {1}).values(), (W{7}));
}

TEST(NewElementwise, ShiftsPastTheWidthGiveZeroOrTheSign) {
  // 1 << 31 wraps to INT32_MIN; a shift of 32 (or a negative amount, read as
  // unsigned) gives 0.
  EXPECT_EQ(op2(Opcode::kShiftLeft, DType::kS32, DType::kS32, {1, 1, 1}, {31, 32, -1}).values(),
            (W{-2147483648.0, 0, 0}));
  // Arithmetic: -8 >> 1 = -4; past the width the sign fills: -1 or 0.
  EXPECT_EQ(op2(Opcode::kShiftRightArithmetic, DType::kS32, DType::kS32, {-8, -8, 8}, {1, 40, 40})
                .values(),
            (W{-4, -1, 0}));
  // Logical: -8 = 0xFFFFFFF8 >> 28 = 0xF = 15; u8 200 >> 3 = 25; past the width 0.
  EXPECT_EQ(op2(Opcode::kShiftRightLogical, DType::kS32, DType::kS32, {-8, -1}, {28, 32}).values(),
            (W{15, 0}));
  EXPECT_EQ(op2(Opcode::kShiftRightLogical, DType::kU8, DType::kU8, {200}, {3}).values(), (W{25}));
}

TEST(NewElementwise, RoundingTranscendentalsAndIsFinite) {
  EXPECT_EQ(op1(Opcode::kRoundNearestAfz, DType::kF32, DType::kF32, {2.5, -2.5, 0.5, 1.4}).values(),
            (W{3, -3, 1, 1}));
  EXPECT_EQ(
      op1(Opcode::kRoundNearestEven, DType::kF32, DType::kF32, {2.5, -2.5, 0.5, 1.6}).values(),
      (W{2, -2, 0, 2}));
  EXPECT_EQ(op1(Opcode::kCbrt, DType::kF32, DType::kF32, {27, -8}).values(), (W{3, -2}));
  EXPECT_EQ(op1(Opcode::kTan, DType::kF32, DType::kF32, {0}).values(), (W{0}));
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(op1(Opcode::kErf, DType::kF32, DType::kF32, {0, inf, -inf}).values(), (W{0, 1, -1}));
  // atan2(1, 1) = pi/4, atan2(0, -1) = pi, rounded to f32.
  EXPECT_EQ(op2(Opcode::kAtan2, DType::kF32, DType::kF32, {1, 0}, {1, -1}).values(),
            (W{static_cast<float>(std::atan(1.0)), static_cast<float>(std::acos(-1.0))}));
  EXPECT_EQ(op1(Opcode::kIsFinite, DType::kF32, DType::kPred, {1, inf, kNaN, -inf}).values(),
            (W{1, 0, 0, 0}));
}

TEST(NewElementwise, ReducePrecisionRoundsTheSignificandAndClampsTheExponent) {
  auto bf16_like = [](Instruction& i) {
    i.attrs.exponent_bits = 8;
    i.attrs.mantissa_bits = 7;
  };
  // 7 mantissa bits: 1 + 2^-8 is a tie -> 1 (even); 1 + 3 * 2^-8 -> 1 + 2^-6.
  EXPECT_EQ(op1(Opcode::kReducePrecision, DType::kF32, DType::kF32,
                {1 + std::ldexp(1, -8), 1 + 3 * std::ldexp(1, -8)}, bf16_like)
                .values(),
            (W{1, 1 + std::ldexp(1, -6)}));
  auto f16_like = [](Instruction& i) {
    i.attrs.exponent_bits = 5;
    i.attrs.mantissa_bits = 10;
  };
  // f16's range: 70000 overflows to inf, 2^-15 is below the smallest normal 2^-14 -> 0; 2^-14
  // stays.
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(op1(Opcode::kReducePrecision, DType::kF32, DType::kF32,
                {70000, std::ldexp(1, -15), std::ldexp(1, -14)}, f16_like)
                .values(),
            (W{inf, 0, std::ldexp(1, -14)}));
}

TEST(NewElementwise, ComplexArithmetic) {
  // complex(1, 2) and complex(3, 4) from real arrays.
  EXPECT_EQ(op2(Opcode::kComplex, DType::kF32, DType::kC64, {1, 3}, {2, 4}).values(),
            (W{1, 2, 3, 4}));
  // (1 + 2i)(3 + 4i) = -5 + 10i; (-5 + 10i) / (3 + 4i) = 1 + 2i; sum 4 + 6i.
  EXPECT_EQ(op2(Opcode::kMultiply, DType::kC64, DType::kC64, {1, 2}, {3, 4}).values(), (W{-5, 10}));
  EXPECT_EQ(op2(Opcode::kDivide, DType::kC64, DType::kC64, {-5, 10}, {3, 4}).values(), (W{1, 2}));
  EXPECT_EQ(op2(Opcode::kAdd, DType::kC64, DType::kC64, {1, 2}, {3, 4}).values(), (W{4, 6}));
  EXPECT_EQ(op2(Opcode::kCompare, DType::kC64, DType::kPred, {1, 2, 1, 2}, {1, 2, 1, 3}).values(),
            (W{1, 0}));
  // real, imag, abs(3 + 4i) = 5, negate.
  EXPECT_EQ(op1(Opcode::kReal, DType::kC64, DType::kF32, {3, 4}).values(), (W{3}));
  EXPECT_EQ(op1(Opcode::kImag, DType::kC64, DType::kF32, {3, 4}).values(), (W{4}));
  EXPECT_EQ(op1(Opcode::kAbs, DType::kC64, DType::kF32, {3, 4}).values(), (W{5}));
  EXPECT_EQ(op1(Opcode::kNegate, DType::kC64, DType::kC64, {3, 4}).values(), (W{-3, -4}));
  // exp(i pi) = -1 (+ ~1e-16 i, rounded in f32 to ~1.2e-16).
  Literal e = op1(Opcode::kExp, DType::kC128, DType::kC128, {0, std::acos(-1.0)});
  EXPECT_NEAR(e.values()[0], -1, 1e-15);
  EXPECT_NEAR(e.values()[1], 0, 1e-15);
  // convert f32 -> c64 puts the value in the real part; real of a real is itself, imag 0.
  EXPECT_EQ(op1(Opcode::kConvert, DType::kF32, DType::kC64, {2.5}).values(), (W{2.5, 0}));
  EXPECT_EQ(op1(Opcode::kImag, DType::kF32, DType::kF32, {2.5}).values(), (W{0}));
}

}  // namespace
}  // namespace podsim::compiler::testing
