// T5 relative position buckets (Raffel et al. 2020) evaluated in the
// interpreter against hand-computed values of
//   bucket(n) = n                                                  n < exact
//             = min(buckets-1, exact + trunc(log(n/exact) / log(128/exact) * (buckets-exact)))
#include <gtest/gtest.h>

#include "compiler/interpreter/interpreter.h"
#include "workloads/transformer_blocks.h"

namespace podsim::workloads {
namespace {

using compiler::DType;

compiler::Literal buckets(int64_t length, bool causal) {
  compiler::Module module("buckets");
  ModelGraph g(module, DType::kF32, DType::kF32);
  g.finish(relative_bucket_ids(g, length, causal), "buckets");
  return compiler::evaluate(module, {});
}

TEST(RelativeBuckets, CausalUsesThirtyTwoBucketsOfQueryMinusKey) {
  compiler::Literal b = buckets(130, /*causal=*/true);
  auto at = [&](int64_t q, int64_t k) { return b.at({q, k}); };
  EXPECT_EQ(at(5, 9), 0);     // future key: n = max(q - k, 0) = 0
  EXPECT_EQ(at(9, 2), 7);     // n = 7 < 16: exact
  EXPECT_EQ(at(15, 0), 15);   // last exact bucket
  EXPECT_EQ(at(16, 0), 16);   // 16 + trunc(log(1)/log(8) * 16) = 16
  EXPECT_EQ(at(20, 0), 17);   // 16 + trunc(0.2231/2.0794 * 16 = 1.717)
  EXPECT_EQ(at(32, 0), 21);   // 16 + trunc(16/3 = 5.333)
  EXPECT_EQ(at(39, 0), 22);   // 16 + trunc(0.8910/2.0794 * 16 = 6.856)
  EXPECT_EQ(at(129, 1), 31);  // n = 128: 16 + 16 capped at 31
}

TEST(RelativeBuckets, BidirectionalUsesSixteenPerDirection) {
  compiler::Literal b = buckets(40, /*causal=*/false);
  auto at = [&](int64_t q, int64_t k) { return b.at({q, k}); };
  EXPECT_EQ(at(4, 4), 0);
  EXPECT_EQ(at(4, 7), 19);   // key 3 after: 16 + 3
  EXPECT_EQ(at(7, 4), 3);    // key 3 before
  EXPECT_EQ(at(0, 10), 24);  // 16 + 8 + trunc(0.2231/2.7726 * 8 = 0.644)
  EXPECT_EQ(at(20, 0), 10);  // 8 + trunc(0.9163/2.7726 * 8 = 2.644)
  EXPECT_EQ(at(39, 0), 12);  // 8 + trunc(1.5841/2.7726 * 8 = 4.571)
}

}  // namespace
}  // namespace podsim::workloads
