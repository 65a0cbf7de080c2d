// common/checked_math.h: exact results below the int64 limit, nullopt at and
// beyond it (INT64_MAX = 2^63 - 1 = 9223372036854775807).
#include <gtest/gtest.h>

#include <limits>

#include "common/checked_math.h"

namespace podsim {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

TEST(CheckedMath, ExactBelowTheLimit) {
  EXPECT_EQ(checked_mul(int64_t{3}, int64_t{7}), 21);
  EXPECT_EQ(checked_mul(int64_t{1} << 31, int64_t{1} << 31), int64_t{1} << 62);
  EXPECT_EQ(checked_add(kMax - 1, int64_t{1}), kMax);
  EXPECT_EQ(checked_product({}), 1);
  EXPECT_EQ(checked_product({2, 3, 5, 7}), 210);
  EXPECT_EQ(checked_mul(int64_t{-4}, int64_t{5}), -20);
}

TEST(CheckedMath, NulloptOnOverflow) {
  // 2^32 x 2^31 = 2^63, one past INT64_MAX.
  EXPECT_EQ(checked_mul(int64_t{1} << 32, int64_t{1} << 31), std::nullopt);
  EXPECT_EQ(checked_add(kMax, int64_t{1}), std::nullopt);
  // 2^40 x 2^40: wraps to 0 in unchecked arithmetic (the "0 devices" bug).
  EXPECT_EQ(checked_product({int64_t{1} << 40, int64_t{1} << 40}), std::nullopt);
  // 10^15 x 10^15 x 4 bytes (a model_dim^2 f32 weight).
  EXPECT_EQ(checked_product({1000000000000000, 1000000000000000, 4}), std::nullopt);
}

TEST(CheckedMath, NulloptPropagates) {
  std::optional<int64_t> overflowed = checked_mul(kMax, int64_t{2});
  EXPECT_EQ(checked_add(overflowed, std::optional<int64_t>(1)), std::nullopt);
  EXPECT_EQ(checked_mul(std::optional<int64_t>(0), overflowed),
            std::nullopt);  // no "0 x anything" shortcut
  EXPECT_EQ(checked_add(std::optional<int64_t>(2), std::optional<int64_t>(3)), 5);
}

}  // namespace
}  // namespace podsim
