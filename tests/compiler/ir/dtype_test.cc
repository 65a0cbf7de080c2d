// Element-type facts (compiler/ir/dtype.h) that callers rely on for rounding
// and tolerances.
#include "compiler/ir/dtype.h"

#include <gtest/gtest.h>

namespace podsim::compiler {
namespace {

// IEEE and OCP formats: significand width including the implicit one
// (bf16 has 7 stored bits, f16 10, f32 23, f64 52; E4M3 3, E5M2 2, E3M4 4);
// complex types take their components' width; non-floating types have none.
TEST(DType, SignificandBitsIncludeTheImplicitOne) {
  EXPECT_EQ(significand_bits(DType::kBF16), 8);
  EXPECT_EQ(significand_bits(DType::kF16), 11);
  EXPECT_EQ(significand_bits(DType::kF32), 24);
  EXPECT_EQ(significand_bits(DType::kF64), 53);
  EXPECT_EQ(significand_bits(DType::kC64), 24);
  EXPECT_EQ(significand_bits(DType::kC128), 53);
  EXPECT_EQ(significand_bits(DType::kF8E4M3FN), 4);
  EXPECT_EQ(significand_bits(DType::kF8E5M2), 3);
  EXPECT_EQ(significand_bits(DType::kF8E3M4), 5);
  EXPECT_EQ(significand_bits(DType::kS32), 0);
  EXPECT_EQ(significand_bits(DType::kPred), 0);
}

}  // namespace
}  // namespace podsim::compiler
