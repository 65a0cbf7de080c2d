// Interpreter: dot (contracting/batch dims, output dim order, bf16 rounding)
// and convolution (padding, stride, lhs/rhs dilation, reversal, feature and
// batch groups, 2-D), sparse dot (2:4 metadata decoding, either side).
#include <string>

#include <gtest/gtest.h>

#include "tests/compiler/interpreter/interp_test_util.h"

namespace podsim::compiler::testing {
namespace {

using V = std::vector<double>;

TEST(Dot, MatmulAndTransposedContractingDims) {
  // A = [[1,2,3],[4,5,6]], B = [[7,8],[9,10],[11,12]]:
  // A.B = [[1*7+2*9+3*11, 1*8+2*10+3*12], [4*7+5*9+6*11, 4*8+5*10+6*12]]
  //     = [[58, 64], [139, 154]].
  // The same product from A^T (contract lhs dim 0) and B^T (contract rhs dim 1).
  Module m = parse_verified(R"(HloModule m
ENTRY main {
  a = f32[2,3] parameter(0)
  b = f32[3,2] parameter(1)
  at = f32[3,2] parameter(2)
  bt = f32[2,3] parameter(3)
  ab = f32[2,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  tt = f32[2,2] dot(at, bt), lhs_contracting_dims={0}, rhs_contracting_dims={1}
  ROOT t = (f32[2,2], f32[2,2]) tuple(ab, tt)
})");
  Literal r = evaluate(m, {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({3, 2}, {7, 8, 9, 10, 11, 12}),
                           f32({3, 2}, {1, 4, 2, 5, 3, 6}), f32({2, 3}, {7, 9, 11, 8, 10, 12})});
  EXPECT_EQ(r.element(0).values(), (V{58, 64, 139, 154}));
  EXPECT_EQ(r.element(1).values(), (V{58, 64, 139, 154}));
}

TEST(Dot, BatchedMatmul) {
  // batch 0: [1,2].[5,6]^T = 17; batch 1: [3,4].[7,8]^T = 53.
  Module m = parse_verified(R"(HloModule m
ENTRY main {
  a = f32[2,1,2] parameter(0)
  b = f32[2,2,1] parameter(1)
  ROOT d = f32[2,1,1] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
})");
  EXPECT_EQ(evaluate(m, {f32({2, 1, 2}, {1, 2, 3, 4}), f32({2, 2, 1}, {5, 6, 7, 8})}).values(),
            (V{17, 53}));
}

TEST(Dot, OutputIsBatchThenLhsFreeThenRhsFree) {
  // lhs[m][b], rhs[b][n], no contraction: out[b][m][n] = lhs[m][b] * rhs[b][n].
  // lhs = [[1,2],[3,4]], rhs = [[1,10,100],[2,20,200]]:
  // b0: m0 1*{1,10,100}, m1 3*{1,10,100}; b1: m0 2*{2,20,200}, m1 4*{2,20,200}.
  Module m = parse_verified(R"(HloModule m
ENTRY main {
  a = f32[2,2] parameter(0)
  b = f32[2,3] parameter(1)
  ROOT d = f32[2,2,3] dot(a, b), lhs_batch_dims={1}, rhs_batch_dims={0}
})");
  EXPECT_EQ(
      evaluate(m, {f32({2, 2}, {1, 2, 3, 4}), f32({2, 3}, {1, 10, 100, 2, 20, 200})}).values(),
      (V{1, 10, 100, 3, 30, 300, 4, 40, 400, 8, 80, 800}));
}

TEST(Dot, Bf16ResultRoundedOnceAfterAccumulation) {
  // [1, 2^-8, 2^-8] . [1, 1, 1] = 1 + 2^-7 exactly in double, representable
  // in bf16. Rounding after every addition would give 1 (1 + 2^-8 ties to 1).
  Module m = parse_verified(R"(HloModule m
ENTRY main {
  a = bf16[3] parameter(0)
  b = bf16[3] parameter(1)
  ROOT d = bf16[] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}
})");
  const double e = 1.0 / 256;
  EXPECT_EQ(
      evaluate(m, {lit(DType::kBF16, {3}, {1, e, e}), lit(DType::kBF16, {3}, {1, 1, 1})}).values(),
      (V{1 + 2 * e}));
}

// 1-D convolution of in = {1,2,3,4,5} (b0f, one batch and feature) with
// kernel {1, 10} (0io); XLA convolution is a cross-correlation.
Literal conv1d(const std::string& window, int64_t out_size) {
  const std::string hlo =
      "HloModule m\nENTRY main {\n  x = f32[1,5,1] parameter(0)\n  k = f32[2,1,1] parameter(1)\n"
      "  ROOT c = f32[1," +
      std::to_string(out_size) + ",1] convolution(x, k), window={" + window +
      "}, dim_labels=b0f_0io->b0f\n}\n";
  return run(hlo, {f32({1, 5, 1}, {1, 2, 3, 4, 5}), f32({2, 1, 1}, {1, 10})});
}

TEST(Convolution, ValidPaddingStrideAndDilations) {
  // out[s] = in[s] + 10 in[s+1] = {21, 32, 43, 54}.
  EXPECT_EQ(conv1d("size=2", 4).values(), (V{21, 32, 43, 54}));
  // pad 1_1, stride 2: padded [0,1,2,3,4,5,0], out (7-2)/2+1 = 3 at 0,2,4:
  // 0+10*1 = 10, 2+10*3 = 32, 4+10*5 = 54.
  EXPECT_EQ(conv1d("size=2 stride=2 pad=1_1", 3).values(), (V{10, 32, 54}));
  // rhs dilation 2: taps at s and s+2: {1+30, 2+40, 3+50}.
  EXPECT_EQ(conv1d("size=2 rhs_dilate=2", 3).values(), (V{31, 42, 53}));
  // lhs dilation 2: [1,_,2,_,3,_,4,_,5] (9), 8 outputs d[s] + 10 d[s+1].
  EXPECT_EQ(conv1d("size=2 lhs_dilate=2", 8).values(), (V{1, 20, 2, 30, 3, 40, 4, 50}));
  // reversal flips the kernel: 10 in[s] + in[s+1] = {12, 23, 34, 45}.
  EXPECT_EQ(conv1d("size=2 rhs_reversal=1", 4).values(), (V{12, 23, 34, 45}));
}

TEST(Convolution, FeatureGroups) {
  // 2 input features {3, 5}, feature_group_count 2, 4 output features with
  // kernel (1 input feature per group) {1,2,3,4}: outputs 0,1 read feature 0,
  // outputs 2,3 read feature 1: {3*1, 3*2, 5*3, 5*4}.
  Module m = parse_verified(R"(HloModule m
ENTRY main {
  x = f32[1,1,2] parameter(0)
  k = f32[1,1,4] parameter(1)
  ROOT c = f32[1,1,4] convolution(x, k), window={size=1}, dim_labels=b0f_0io->b0f, feature_group_count=2
})");
  EXPECT_EQ(evaluate(m, {f32({1, 1, 2}, {3, 5}), f32({1, 1, 4}, {1, 2, 3, 4})}).values(),
            (V{3, 6, 15, 20}));
}

TEST(Convolution, BatchGroups) {
  // Input batches {3, 5}, batch_group_count 2, kernel features {2, 7}: output
  // feature 0 reads batch group 0 (3*2), feature 1 batch group 1 (5*7).
  Module m = parse_verified(R"(HloModule m
ENTRY main {
  x = f32[2,1,1] parameter(0)
  k = f32[1,1,2] parameter(1)
  ROOT c = f32[1,1,2] convolution(x, k), window={size=1}, dim_labels=b0f_0io->b0f, batch_group_count=2
})");
  EXPECT_EQ(evaluate(m, {f32({2, 1, 1}, {3, 5}), f32({1, 1, 2}, {2, 7})}).values(), (V{6, 35}));
}

TEST(Convolution, TwoDimensionalNchw) {
  // [3,3] iota with an all-ones 2x2 kernel: sums of the 2x2 blocks
  // 0+1+3+4 = 8, 1+2+4+5 = 12, 3+4+6+7 = 20, 4+5+7+8 = 24.
  Module m = parse_verified(R"(HloModule m
ENTRY main {
  x = f32[1,1,3,3] parameter(0)
  k = f32[1,1,2,2] parameter(1)
  ROOT c = f32[1,1,2,2] convolution(x, k), window={size=2x2}, dim_labels=bf01_oi01->bf01
})");
  Literal ones{Shape(DType::kF32, {1, 1, 2, 2})};
  for (double& v : ones.mutable_values()) v = 1;
  EXPECT_EQ(evaluate(m, {iota_literal(DType::kF32, {1, 1, 3, 3}), ones}).values(),
            (V{8, 12, 20, 24}));
}

TEST(Convolution, TwoBatchesTwoInputFeatures) {
  // b0f, batch 2, 2 input features, spatial 1, kernel 0io [1,2,1] = {1, 100}:
  // out[b] = x[b][f0] + 100 x[b][f1]; x = {{1,2},{3,4}} -> {201, 403}.
  Module m = parse_verified(R"(HloModule m
ENTRY main {
  x = f32[2,1,2] parameter(0)
  k = f32[1,2,1] parameter(1)
  ROOT c = f32[2,1,1] convolution(x, k), window={size=1}, dim_labels=b0f_0io->b0f
})");
  EXPECT_EQ(evaluate(m, {f32({2, 1, 2}, {1, 2, 3, 4}), f32({1, 2, 1}, {1, 100})}).values(),
            (V{201, 403}));
}

TEST(SparseDot, LhsTwoOfFourDecodesTheMetadataFields) {
  // Logical lhs row of 8 = two groups of 4; the stored row keeps 2 per group:
  // [10, 20 | 30, 40]. One u16 of metadata holds the four 2-bit positions,
  // lowest bits first: group 0 at 1 and 3, group 1 at 0 and 2, so
  // 1 | 3 << 2 | 0 << 4 | 2 << 6 = 141 and the logical row is
  // [0, 10, 0, 20, 30, 0, 40, 0]. With rhs = [1..8]^T:
  // 10*2 + 20*4 + 30*5 + 40*7 = 20 + 80 + 150 + 280 = 530.
  Module m = parse_verified(R"(HloModule m
ENTRY main {
  lhs = f32[1,4] parameter(0)
  rhs = f32[8,1] parameter(1)
  meta = u16[1,1] parameter(2)
  ROOT d = f32[1,1] dot(lhs, rhs, meta), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sparsity=L.1@2:4
})");
  const Literal out =
      evaluate(m, {f32({1, 4}, {10, 20, 30, 40}), f32({8, 1}, {1, 2, 3, 4, 5, 6, 7, 8}),
                   lit(DType::kU16, {1, 1}, {141})});
  EXPECT_EQ(out.values(), (V{530}));
}

TEST(SparseDot, RhsSparsityAndAFieldPerStoredValuePerMetadataElement) {
  // rhs stored [4,1] stands for a logical [8,1] (sparse along dim 0). The
  // metadata is u8[2,1]: 8 bits hold four 2-bit fields, so element 0 covers
  // stored values 0..3 and element 1 is padding the decoder never reads.
  // Positions 0,1 | 2,3 (fields 0,1,2,3 -> 0 | 1<<2 | 2<<4 | 3<<6 = 228) give
  // the logical column [a, b, 0, 0, 0, 0, c, d] = [1, 2, 0, 0, 0, 0, 3, 4];
  // lhs = [1..8]: 1*1 + 2*2 + 7*3 + 8*4 = 1 + 4 + 21 + 32 = 58.
  Module m = parse_verified(R"(HloModule m
ENTRY main {
  lhs = f32[1,8] parameter(0)
  rhs = f32[4,1] parameter(1)
  meta = u8[2,1] parameter(2)
  ROOT d = f32[1,1] dot(lhs, rhs, meta), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sparsity=R.0@2:4
})");
  const Literal out = evaluate(m, {f32({1, 8}, {1, 2, 3, 4, 5, 6, 7, 8}), f32({4, 1}, {1, 2, 3, 4}),
                                   lit(DType::kU8, {2, 1}, {228, 0})});
  EXPECT_EQ(out.values(), (V{58}));
}

TEST(SparseDot, EqualsTheDenseDotOfTheExpandedOperand) {
  // Two rows, each of two groups; row 0 positions (0,2),(1,3) = fields
  // 0,2,1,3 -> 0 | 2<<2 | 1<<4 | 3<<6 = 216; row 1 positions (2,3),(0,1) =
  // 2 | 3<<2 | 0<<4 | 1<<6 = 78. Stored rows [1,2,3,4] and [5,6,7,8] expand to
  // [1,0,2,0, 0,3,0,4] and [0,0,5,6, 7,8,0,0]; the sparse dot must equal the
  // dense dot of those rows with the same rhs.
  Module sparse = parse_verified(R"(HloModule m
ENTRY main {
  lhs = f32[2,4] parameter(0)
  rhs = f32[8,3] parameter(1)
  meta = u16[2,1] parameter(2)
  ROOT d = f32[2,3] dot(lhs, rhs, meta), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sparsity=L.1@2:4
})");
  Module dense = parse_verified(R"(HloModule m
ENTRY main {
  lhs = f32[2,8] parameter(0)
  rhs = f32[8,3] parameter(1)
  ROOT d = f32[2,3] dot(lhs, rhs), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  const Literal rhs = iota_literal(DType::kF32, {8, 3});
  const Literal got = evaluate(
      sparse, {f32({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}), rhs, lit(DType::kU16, {2, 1}, {216, 78})});
  const Literal want =
      evaluate(dense, {f32({2, 8}, {1, 0, 2, 0, 0, 3, 0, 4, 0, 0, 5, 6, 7, 8, 0, 0}), rhs});
  EXPECT_EQ(got.values(), want.values());
}

TEST(SparseDot, MetadataTooShortIsAUserError) {
  // 8 stored values need 8 two-bit fields = one u16; a u8 holds only 4.
  Module m = parse_verified(R"(HloModule m
ENTRY main {
  lhs = f32[1,8] parameter(0)
  rhs = f32[16,1] parameter(1)
  meta = u8[1,1] parameter(2)
  ROOT d = f32[1,1] dot(lhs, rhs, meta), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sparsity=L.1@2:4
})");
  EXPECT_THROW(evaluate(m, {iota_literal(DType::kF32, {1, 8}), iota_literal(DType::kF32, {16, 1}),
                            lit(DType::kU8, {1, 1}, {0})}),
               UserError);
}

}  // namespace
}  // namespace podsim::compiler::testing
